"""The engine: key state, timers, contexts and the strategies that run a window operator
(``docs/design.md``). Pure Python; nothing here imports Spark."""
