"""Bridges to other frameworks (imported explicitly: ``tiles.integrations.torch``)."""
