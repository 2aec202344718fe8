"""CSV and self-contained HTML cost reports (pure: values in, files out)."""
