"""Inference backends behind one small interface; see :mod:`.base`."""

from freespace_seg.perception.engines.base import BACKENDS, create_engine, Engine, EngineError

__all__ = ['BACKENDS', 'Engine', 'EngineError', 'create_engine']
