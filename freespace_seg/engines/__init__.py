"""Inference backends behind one small interface; see :mod:`freespace_seg.engines.base`."""

from freespace_seg.engines.base import BACKENDS, create_engine, Engine, EngineError

__all__ = ['BACKENDS', 'Engine', 'EngineError', 'create_engine']
