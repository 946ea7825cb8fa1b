"""Built-in aggregations computed on whole Arrow columns, in the batch replay and the
streaming processor (``SparkPlan.columnar``): the same windows, firings and late rows as the
window operator, a key group at a time.

- ``core.py``: the open windows of the columnar state (``OpenWindows``), the calls every
  shape answers (``WindowShape``) and what the shapes share;
- ``tumbling.py``: tumbling windows, one reduced record per window;
- ``hopping.py``: hopping windows as panes;
- ``sessions.py``: event-time sessions as gaps and islands;
- ``ranges.py``: running ranges and sweeps over sorted columns.
"""
