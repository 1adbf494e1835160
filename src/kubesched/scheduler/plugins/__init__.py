"""In-tree plugins, one module per upstream plugin package."""
