"""Who may see and do what: roles, namespaces and the identities that hold them (issue 12)."""
