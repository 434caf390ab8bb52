//! Relay's acceptance rules for Sample v2 profile chunks (placeholder, being written).
