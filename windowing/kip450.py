"""Moved to :mod:`windowing.engine.kafka`; kept so that key states pickled by earlier versions
(streaming checkpoints, snapshots) still load."""

from windowing.engine.kafka import KafkaSliding, KafkaWindowStore

__all__ = ["KafkaSliding", "KafkaWindowStore"]
