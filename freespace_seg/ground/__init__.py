"""From a class mask to a ground grid: the camera model and the ground projection."""
