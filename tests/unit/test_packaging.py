"""The package's metadata: what setuptools reads without a deprecation warning."""

from __future__ import annotations

import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_the_license_is_an_spdx_expression_without_a_license_classifier() -> None:
    """setuptools >= 77 deprecates a license table and license classifiers (PEP 639): the
    license is one SPDX expression, and the build requires a setuptools that reads it."""
    data = tomllib.loads(PYPROJECT.read_text())
    project = data["project"]
    assert project["license"] == "Apache-2.0"
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]
    assert "setuptools>=77" in data["build-system"]["requires"]


def test_a_spark_connect_client_has_an_install_extra() -> None:
    extras = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    assert extras["connect"] == ["pyspark[connect]>=4.0"]
