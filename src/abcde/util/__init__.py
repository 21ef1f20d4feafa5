"""Helpers with no knowledge of clusterings: progress display and all-or-nothing file writes."""
