"""The scheduling framework: extension-point interfaces, statuses, cycle state and the runtime."""
