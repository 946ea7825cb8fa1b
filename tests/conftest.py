"""Hypothesis profiles for the whole test suite (Polars ``profiles.py``).

Pick one with the environment variable ``HYPOTHESIS_PROFILE``:

* ``fast`` (about 50 examples per property): pre-commit and quick local runs;
* ``balanced`` (about 200, the default): CI; derandomized, so that the same examples run on
  every machine and a failure on main is one a change caused and anyone can reproduce;
* ``expensive`` (about 1000, random): nightly, before a release, and after a change to the
  core: it draws new examples each run (add ``--hypothesis-seed=N`` to replay one).

No profile sets a deadline: operator runs vary in time with the drawn input size, and a
deadline would turn slow machines into flaky failures.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("fast", max_examples=50, deadline=None)
settings.register_profile("balanced", max_examples=200, deadline=None, derandomize=True)
settings.register_profile("expensive", max_examples=1000, deadline=None)

_PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "balanced")
if _PROFILE not in ("fast", "balanced", "expensive"):
    msg = f"HYPOTHESIS_PROFILE must be one of fast, balanced, expensive; got {_PROFILE!r}"
    raise ValueError(msg)
settings.load_profile(_PROFILE)

# The tests run as a default installation does: without a state key (state is plain data,
# checksummed). Tests of signed state set WINDOWING_STATE_KEY themselves.
os.environ.pop("WINDOWING_STATE_KEY", None)
