"""Host-side helpers with Triton's ``triton.tools`` names (``tiles.tools.tensor_descriptor``)."""
