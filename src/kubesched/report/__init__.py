"""Reports for people: self-contained HTML with inline SVG plots (no JavaScript, works offline)."""
