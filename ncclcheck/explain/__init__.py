"""Element-count arithmetic: what tensor a NumelIn is under each layout."""
