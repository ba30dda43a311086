//! A `tracing` visitor that keeps every field of a span or event as text, for the test
//! subscribers of this directory (`#[path = "support/fields.rs"] mod fields;`).

use std::collections::BTreeMap;
use std::fmt;

use tracing::field::{Field, Visit};

/// Field names and their values as text: strings as they are, numbers in decimal, anything else
/// in its `Debug` form (a formatted message as its text).
pub(crate) struct Fields<'a>(pub(crate) &'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}
