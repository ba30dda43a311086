//! Which OAuth scope each tool needs, decided by its tags.

use tool_runtime::ToolDefinition;

/// The scope of read-only tools in the default [`ScopeMap`]: `tools:read`.
pub const READ_SCOPE: &str = "tools:read";
/// The scope of tools that change something in the default [`ScopeMap`]: `tools:write`.
pub const WRITE_SCOPE: &str = "tools:write";
/// The scope of tools that run commands or reach the network in the default [`ScopeMap`]:
/// `tools:exec`.
pub const EXEC_SCOPE: &str = "tools:exec";

/// Which scope a token needs to see and call each tool, from the tool's tags: an ordered list of
/// rules `scope <- tags`, the first rule naming one of the tool's tags gives its scope, and a tool
/// no rule names needs the fallback scope. A scope grants exactly its tools (none implies
/// another): a client that reads and writes asks for `tools:read tools:write`.
///
/// The default ([`ScopeMap::default`]):
///
/// | scope | tools |
/// | --- | --- |
/// | `tools:exec` | tagged `exec` (they run commands) or `external` (they reach the network) |
/// | `tools:read` | tagged `read_only`, and none of the above |
/// | `tools:write` | every other tool (the fallback) |
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeMap {
    rules: Vec<(String, Vec<String>)>,
    fallback: String,
}

impl Default for ScopeMap {
    fn default() -> Self {
        Self::new(WRITE_SCOPE)
            .rule(EXEC_SCOPE, [tool_runtime::EXEC_TAG, tool_runtime::EXTERNAL_TAG])
            .rule(READ_SCOPE, ["read_only"])
    }
}

impl ScopeMap {
    /// A map with no rule: every tool needs `fallback`.
    pub fn new(fallback: impl Into<String>) -> Self {
        Self { rules: Vec::new(), fallback: fallback.into() }
    }

    /// Adds a rule after the ones already there: a tool with any of `tags` needs `scope` (unless
    /// an earlier rule names one of its tags).
    #[must_use]
    pub fn rule(mut self, scope: impl Into<String>, tags: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.rules.push((scope.into(), tags.into_iter().map(Into::into).collect()));
        self
    }

    /// Reads a map from text, as `toolbox mcp --auth-scopes-map` takes it: entries separated by
    /// `;`, each `SCOPE=TAG[,TAG...]` (a rule, in the order given) or `SCOPE=*` (the fallback,
    /// exactly once). The default map is
    /// `tools:exec=exec,external;tools:read=read_only;tools:write=*`.
    ///
    /// # Errors
    /// An entry without `=`, an empty scope or tag, a scope with a space or a quote, or no `*`
    /// entry or two of them, said so.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut rules = Vec::new();
        let mut fallback = None;
        for entry in text.split(';').map(str::trim).filter(|e| !e.is_empty()) {
            let Some((scope, tags)) = entry.split_once('=') else {
                return Err(format!("scope map entry `{entry}` has no `=`; give `SCOPE=TAG,TAG` or `SCOPE=*`"));
            };
            let scope = scope.trim();
            if scope.is_empty() || scope.contains([' ', '"', '\\']) {
                return Err(format!(
                    "scope map entry `{entry}`: `{scope}` is not a scope (a non-empty name without spaces, quotes or \
                     backslashes)"
                ));
            }
            if tags.trim() == "*" {
                if fallback.replace(scope.to_owned()).is_some() {
                    return Err("the scope map has two `SCOPE=*` entries; give the fallback scope once".to_owned());
                }
                continue;
            }
            let tags: Vec<String> = tags.split(',').map(|t| t.trim().to_owned()).collect();
            if tags.iter().any(String::is_empty) {
                return Err(format!("scope map entry `{entry}` has an empty tag; give `SCOPE=TAG,TAG`"));
            }
            rules.push((scope.to_owned(), tags));
        }
        let Some(fallback) = fallback else {
            return Err(format!(
                "the scope map `{text}` has no fallback; add `SCOPE=*` for the tools no rule names (e.g. \
                 `tools:write=*`)"
            ));
        };
        Ok(Self { rules, fallback })
    }

    /// The scope `definition` needs.
    pub fn required(&self, definition: &ToolDefinition) -> &str {
        self.required_by(&definition.tags)
    }

    /// `true` when a token with the scopes `granted` may see and call `definition`.
    pub fn allows(&self, definition: &ToolDefinition, granted: &[String]) -> bool {
        self.allows_tags(&definition.tags, granted)
    }

    /// The one decision of authorization: `true` when a token with the scopes `granted` may see
    /// and call a tool with `tags`. Every path that lists, finds or runs a tool asks it (the
    /// listing, the endpoint's `403`, and through the call's [access](tool_runtime::ToolAccess) the
    /// registry itself, so the meta-tools, tasks and their reruns decide alike).
    pub fn allows_tags(&self, tags: &[String], granted: &[String]) -> bool {
        let required = self.required_by(tags);
        granted.iter().any(|g| g == required)
    }

    /// The scope a tool with `tags` needs.
    fn required_by(&self, tags: &[String]) -> &str {
        self.rules
            .iter()
            .find(|(_, rule)| rule.iter().any(|tag| tags.iter().any(|t| t == tag)))
            .map_or(&self.fallback, |(scope, _)| scope)
    }

    /// Every scope of the map, each once: the rules' in order, then the fallback (the protected
    /// resource metadata's `scopes_supported`).
    pub fn scopes(&self) -> Vec<&str> {
        let mut scopes: Vec<&str> = Vec::new();
        for scope in self.rules.iter().map(|(s, _)| s.as_str()).chain([self.fallback.as_str()]) {
            if !scopes.contains(&scope) {
                scopes.push(scope);
            }
        }
        scopes
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(tags: &[&str]) -> ToolDefinition {
        ToolDefinition {
            name: "t".to_owned(),
            description: String::new(),
            input_schema: json!({"type": "object"}),
            set: None,
            tags: tags.iter().map(|t| (*t).to_owned()).collect(),
            strict: None,
            output_schema: None,
            callers: tool_runtime::Callers::Direct,
        }
    }

    #[test]
    fn the_default_map_gives_exec_before_read_and_write_to_the_rest() {
        let map = ScopeMap::default();
        assert_eq!(map.required(&tool(&["read_only"])), "tools:read");
        assert_eq!(map.required(&tool(&["read_only", "external"])), "tools:exec");
        assert_eq!(map.required(&tool(&["exec"])), "tools:exec");
        assert_eq!(map.required(&tool(&["destructive"])), "tools:write");
        assert_eq!(map.required(&tool(&[])), "tools:write");
        assert_eq!(map.scopes(), ["tools:exec", "tools:read", "tools:write"]);
    }

    #[test]
    fn a_scope_grants_only_its_own_tools() {
        let map = ScopeMap::default();
        let write = vec!["tools:write".to_owned()];
        assert!(map.allows(&tool(&[]), &write));
        assert!(!map.allows(&tool(&["read_only"]), &write));
    }

    #[test]
    fn the_text_form_of_the_default_map_reads_as_the_default() {
        assert_eq!(
            ScopeMap::parse("tools:exec=exec,external; tools:read=read_only; tools:write=*"),
            Ok(ScopeMap::default())
        );
    }

    #[test]
    fn a_text_map_without_fallback_or_with_a_bad_entry_is_refused_with_what_to_give() {
        assert_eq!(
            ScopeMap::parse("a=read_only"),
            Err("the scope map `a=read_only` has no fallback; add `SCOPE=*` for the tools no rule names (e.g. \
                 `tools:write=*`)"
                .to_owned())
        );
        assert_eq!(
            ScopeMap::parse("a;b=*"),
            Err("scope map entry `a` has no `=`; give `SCOPE=TAG,TAG` or `SCOPE=*`".to_owned())
        );
        assert_eq!(
            ScopeMap::parse("a=x,;b=*"),
            Err("scope map entry `a=x,` has an empty tag; give `SCOPE=TAG,TAG`".to_owned())
        );
        assert_eq!(
            ScopeMap::parse("a=*;b=*"),
            Err("the scope map has two `SCOPE=*` entries; give the fallback scope once".to_owned())
        );
    }
}
