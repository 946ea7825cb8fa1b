"""Built-in aggregations computed on whole Arrow columns, in the batch replay and the
streaming processor (``SparkPlan.columnar``): the same windows, firings and late rows as the
window operator, a key group at a time.

- ``core.py``: tumbling windows, the open windows of the columnar state (``OpenWindows``),
  and what the shapes share;
- ``hopping.py``: hopping windows as panes;
- ``sessions.py``: event-time sessions as gaps and islands;
- ``ranges.py``: running ranges and sweeps over sorted columns.
"""
