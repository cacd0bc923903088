"""Host probe: collectors, lint rules and recommendations."""
