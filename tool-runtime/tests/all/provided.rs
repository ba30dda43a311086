//! Keys without a `create` (`DependencyKey::provided`): the value is made by the program and
//! handed to the builder; a registry missing one does not build.

use std::sync::{Arc, Mutex};

use tool_runtime::prelude::*;
use tool_runtime::{DependencyName, MissingDependency, RegistryError, ToolError, ToolErrorKind};

/// A database the program opens before it builds the registry.
#[derive(Debug, Default)]
struct Database {
    rows: Mutex<Vec<String>>,
}

static DATABASE: DependencyKey<Arc<Database>> = DependencyKey::provided("database");
static API_KEY: DependencyKey<String> = DependencyKey::provided("api_key");

/// Insert a row.
#[tool]
async fn insert(
    /// The row.
    row: String,
    #[depends(DATABASE)] db: Arc<Database>,
) -> String {
    let mut rows = db.rows.lock().unwrap();
    rows.push(row);
    rows.len().to_string()
}

/// Count the rows.
#[tool(set = "read")]
async fn count(#[depends(DATABASE)] db: Arc<Database>) -> String {
    db.rows.lock().unwrap().len().to_string()
}

/// Publish the rows.
#[tool(set = "publish")]
async fn publish(#[depends(&API_KEY)] key: String, #[depends(DATABASE)] db: Arc<Database>) -> String {
    format!("{} rows with a key of {} bytes", db.rows.lock().unwrap().len(), key.len())
}

async fn call(registry: &Registry, name: &str, arguments: &str) -> ToolMessage {
    registry.call(&ToolCall::new("c", name, arguments), &ToolContext::new()).await
}

#[tokio::test]
async fn a_value_made_in_main_is_handed_to_every_call_with_one_provide() {
    let db = Arc::new(Database::default());
    let registry =
        Registry::builder().tool(insert::TOOL).tool(count::TOOL).provide(&DATABASE, db.clone()).build().unwrap();
    assert_eq!(call(&registry, "insert", r#"{"row":"a"}"#).await.text(), "1");
    assert_eq!(call(&registry, "insert", r#"{"row":"b"}"#).await.text(), "2");
    assert_eq!(call(&registry, "count", "{}").await.text(), "2");
    assert_eq!(*db.rows.lock().unwrap(), ["a", "b"]);
}

#[test]
fn a_registry_whose_tool_needs_a_key_nobody_provided_fails_to_build_naming_the_key_and_the_tool() {
    let error = Registry::builder().tool(insert::TOOL).build().unwrap_err();
    assert_eq!(
        error,
        RegistryError::MissingDependencies {
            missing: vec![MissingDependency { key: "DATABASE".to_owned(), tools: vec!["insert".to_owned()] }]
        }
    );
    assert_eq!(
        error.to_string(),
        "the dependency key `DATABASE` (asked for by `insert`) has no value: a key declared with `DependencyKey::provided` gets its value from the program, before `build`: `Registry::builder().discover().provide(&DATABASE, value).build()` (or `.tool(..)` for each tool instead of `.discover()`; `Registry::discover()` cannot take values)"
    );
}

#[test]
fn every_missing_key_is_reported_at_once_with_every_tool_that_asks_for_it() {
    let error = Registry::builder().tool(publish::TOOL).tool(insert::TOOL).tool(count::TOOL).build().unwrap_err();
    assert_eq!(
        error,
        RegistryError::MissingDependencies {
            missing: vec![
                MissingDependency { key: "API_KEY".to_owned(), tools: vec!["publish".to_owned()] },
                MissingDependency {
                    key: "DATABASE".to_owned(),
                    tools: vec!["count".to_owned(), "insert".to_owned(), "publish".to_owned()]
                },
            ]
        }
    );
    assert!(error.to_string().starts_with(
        "the dependency keys `API_KEY` (asked for by `publish`), `DATABASE` (asked for by `count`, `insert`, `publish`) have no value: a key declared with `DependencyKey::provided` gets its value from the program, before `build`: `Registry::builder().discover().provide(&API_KEY, value).provide(&DATABASE, value).build()`"
    ));
}

#[test]
fn a_key_given_a_value_is_no_longer_missing() {
    let error =
        Registry::builder().tool(publish::TOOL).provide(&DATABASE, Arc::new(Database::default())).build().unwrap_err();
    assert_eq!(
        error,
        RegistryError::MissingDependencies {
            missing: vec![MissingDependency { key: "API_KEY".to_owned(), tools: vec!["publish".to_owned()] }]
        }
    );
}

#[test]
fn a_tool_left_out_by_sets_does_not_need_its_keys() {
    let registry = Registry::builder()
        .tool(publish::TOOL)
        .tool(count::TOOL)
        .sets(["read"])
        .provide(&DATABASE, Arc::new(Database::default()))
        .build()
        .unwrap();
    assert_eq!(registry.names().collect::<Vec<_>>(), ["count"]);
}

#[tokio::test]
async fn resolving_a_provided_key_without_a_value_outside_a_registry_names_it_by_id_and_says_to_provide_it() {
    let error = ToolContext::new().resolve(&API_KEY).await.unwrap_err();
    assert_eq!(
        error,
        ToolError::DependencyNotProvided { tool: String::new(), key: DependencyName::new("api_key", None::<&str>) }
    );
    assert_eq!(
        error.to_string(),
        "dependency with key id \"api_key\" was not provided: call \
         `Registry::builder().discover().provide(&KEY, value).build()` with `KEY` the static declared \
         `DependencyKey::provided(\"api_key\")` (or `.tool(..)` for each tool instead of `.discover()`; \
         `Registry::discover()` cannot take values), or give a call its own value with \
         `ToolContext::builder().override_dependency(&KEY, value)`"
    );
}

#[tokio::test]
async fn a_tool_called_outside_a_registry_names_the_missing_key_by_the_static_its_depends_wrote() {
    let ctx = ToolContext::builder().override_dependency(&DATABASE, Arc::new(Database::default())).build();
    let error = publish::TOOL.call("{}", &ctx).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "dependency `API_KEY` (key id \"api_key\") was not provided: call \
         `Registry::builder().discover().provide(&API_KEY, value).build()` (or `.tool(..)` for each tool instead of \
         `.discover()`; `Registry::discover()` cannot take values), or give a call its own value with \
         `ToolContext::builder().override_dependency(&API_KEY, value)`"
    );
}

fn make_signer(ctx: &ToolContext) -> futures::future::BoxFuture<'_, Result<String, DependencyError>> {
    Box::pin(async move { Ok(format!("signer of {}", ctx.resolve(&API_KEY).await?)) })
}

/// A key whose `create` asks for the provided [`API_KEY`], which no `#[depends]` of the
/// registries below names, so their build checks cannot see it.
static SIGNER: DependencyKey<String> = DependencyKey::per_call_async("signer", make_signer);

/// Sign the rows.
#[tool]
async fn sign(#[depends(SIGNER)] signer: String) -> String {
    signer
}

#[tokio::test]
async fn a_provided_key_without_a_value_asked_for_by_another_keys_create_is_a_dependency_error_naming_both() {
    let registry = Registry::builder().tool(sign::TOOL).build().unwrap();
    let message = registry.call(&ToolCall::new("c1", "sign", "{}"), &ToolContext::new()).await;
    assert_eq!(message.error_kind, Some(ToolErrorKind::Dependency));
    assert_eq!(
        message.text(),
        "tool `sign` could not run: dependency `SIGNER` (key id \"signer\") failed: dependency with key id \
         \"api_key\" was not provided: call `Registry::builder().discover().provide(&KEY, value).build()` with `KEY` \
         the static declared `DependencyKey::provided(\"api_key\")` (or `.tool(..)` for each tool instead of \
         `.discover()`; `Registry::discover()` cannot take values), or give a call its own value with \
         `ToolContext::builder().override_dependency(&KEY, value)`"
    );
}

#[tokio::test]
async fn a_context_override_wins_over_the_provided_value() {
    let registry = Registry::builder()
        .tool(publish::TOOL)
        .provide(&DATABASE, Arc::new(Database::default()))
        .provide(&API_KEY, "key".to_owned())
        .build()
        .unwrap();
    let ctx = ToolContext::builder().override_dependency(&API_KEY, "longer key".to_owned()).build();
    let message = registry.call(&ToolCall::new("c", "publish", "{}"), &ctx).await;
    assert_eq!(message.text(), "0 rows with a key of 10 bytes");
}

#[test]
fn each_constructor_states_its_scope() {
    fn none(_: &ToolContext) -> Result<u8, DependencyError> {
        Ok(0)
    }
    assert_eq!(DependencyKey::per_call("a", none).scope(), Scope::Call);
    assert_eq!(DependencyKey::shared("b", none).scope(), Scope::Registry);
    assert_eq!(DATABASE.scope(), Scope::Provided);
    assert!(DATABASE.is_provided());
    assert!(!DependencyKey::shared("b", none).is_provided());
}

#[test]
#[allow(deprecated)]
fn the_deprecated_constructors_keep_their_meaning() {
    fn none(_: &ToolContext) -> Result<u8, DependencyError> {
        Ok(0)
    }
    assert_eq!(DependencyKey::new("a", none).scope(), Scope::Call);
    assert_eq!(DependencyKey::new("a", none).with_scope(Scope::Registry).scope(), Scope::Registry);
    assert_eq!(DependencyKey::new("a", none).with_scope(Scope::Provided).scope(), Scope::Call);
    assert_eq!(DependencyKey::<u8>::provided("b").with_scope(Scope::Registry).scope(), Scope::Provided);
}
