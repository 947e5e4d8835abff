"""
Training, ONNX export and evaluation of the free-space UNet.

``model``, ``train`` and ``export`` need torch (CPU build); ``data`` and ``evaluate`` do not,
so ``python -m freespace_seg eval`` runs with ONNX Runtime alone. Nothing here is imported
by the node.
"""
