"""The columns and tables every route shares.

- ``inputs.py``: the internal input columns (event time, content hash, arrival order,
  processing time);
- ``keys.py``: key values and key groups;
- ``schema.py``: input validation, output schemas, Arrow <-> Python values;
- ``output.py``: the one tagged output (results, side outputs, late rows, dead letters,
  metrics) and how it is split;
- ``operator_rows.py``, ``side_outputs.py``, ``failures.py``: an operator call's rows, side
  outputs and dead letters in that output;
- ``metrics.py``: the counters and gauges;
- ``frames.py``: Arrow IPC and the packed frames of a streaming call;
- ``watermark.py``: the arrival-order watermark, without moving all rows to one partition;
- ``aggregates.py``: ``.agg``'s Spark aggregate functions, compiled;
- ``field_aggregates.py``: the built-ins (``.sum`` ...) as such aggregates, for native plans.
"""
