"""Differential conformance fuzzing against Apache Flink's window operator.

``python -m tests.conformance.run`` (or ``./dev conformance``) runs random scenarios through
Flink 2.3's ``WindowOperator`` / ``EvictingWindowOperator`` and through
:class:`windowing.testing.WindowOperatorHarness`, and reports where the outputs differ.
See :mod:`tests.conformance.run`.
"""
