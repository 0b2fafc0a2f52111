//! Tests for the parent module.
