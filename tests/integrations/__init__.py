"""Tests of pipeline/integrations: Hermes (plugin, provider, install) and MCP, driven as their hosts drive them."""
