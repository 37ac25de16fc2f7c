"""Notifications: ledger events pushed to admin-configured sinks (docs/notifications.md)."""
