//! Provider shapes (placeholder).
