//! Standard tools.
