"""Native Spark plans of a batch ``WindowedStream.agg``: Spark SQL computes the windows and
Python never sees the rows (the planner picks one of these routes, ``planning.Route``).

- ``windows.py``: tumbling windows and sessions (event-time and arrival order), and the tail
  every native route shares (results, metrics, late rows);
- ``processing.py``: tumbling processing-time windows of a ``processing_time`` column;
- ``hopping.py``: hopping windows from pane partials, and windows no longer than their slide;
- ``hopping_arrival.py``: hopping windows in arrival order;
- ``sliding.py``: KIP-450 sliding windows (range frames, or each window joined to its rows);
- ``parts.py``: what the routes share (their pieces, counters, the window at the start of
  time) and the predicates the planner asks;
- ``firings.py``: late firings as running aggregates in replay order.
"""
