"""Device specification YAML files shipped with profaudit (read through profaudit.specs)."""
