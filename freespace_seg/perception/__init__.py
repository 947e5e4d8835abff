"""The runtime path from a camera image to a class mask: decode, preprocess, infer, decode."""
