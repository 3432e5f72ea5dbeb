"""Services: defaults, address and node port allocation, the table printer."""
