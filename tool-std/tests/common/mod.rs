//! A workspace on a real temp directory and a registry of the tool-std tools rooted in it.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use tool_runtime::idempotency::MemoryIdempotencyStore;
use tool_runtime::output::{MemoryStore, OUTPUT_STORE, OutputStore};
use tool_runtime::{ApprovalTokens, Registry, RegistryBuilder, ToolCall, ToolContext, ToolMessage};
use tool_std::fs::{FS_LIMITS, FsLimits};
use tool_std::sandbox::{SANDBOX, Sandbox};

/// A temp directory holding `ws/` (the sandbox root) and room for siblings of it.
pub struct Workspace {
    _dir: tempfile::TempDir,
    /// The parent of the root (canonical), for files outside the workspace.
    pub parent: PathBuf,
    /// The sandbox root (canonical).
    pub root: PathBuf,
    registry: Registry,
}

impl Workspace {
    /// A workspace whose registry has the default limits and a checking sandbox.
    pub fn new() -> Self {
        Self::build(|root| Sandbox::new(root).unwrap(), FsLimits::default())
    }

    /// A workspace with other fs limits.
    pub fn with_limits(limits: FsLimits) -> Self {
        Self::build(|root| Sandbox::new(root).unwrap(), limits)
    }

    /// A workspace whose sandbox is made by `sandbox` from the root.
    pub fn with_sandbox(sandbox: impl FnOnce(&Path) -> Sandbox) -> Self {
        Self::build(sandbox, FsLimits::default())
    }

    /// A workspace whose registry has `limits`, and needs the user's approval for every tool
    /// tagged `destructive`, bound to the call by approval tokens (in memory).
    pub fn with_approvals(limits: FsLimits) -> Self {
        Self::build_with(
            |root| Sandbox::new(root).unwrap(),
            limits,
            |builder| {
                let tokens = ApprovalTokens::new(MemoryIdempotencyStore::new());
                builder.confirm_tag("destructive").approval_tokens(tokens)
            },
        )
    }

    fn build(sandbox: impl FnOnce(&Path) -> Sandbox, limits: FsLimits) -> Self {
        Self::build_with(sandbox, limits, |builder| builder)
    }

    fn build_with(
        sandbox: impl FnOnce(&Path) -> Sandbox,
        limits: FsLimits,
        settings: impl FnOnce(RegistryBuilder) -> RegistryBuilder,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let parent = std::fs::canonicalize(dir.path()).unwrap();
        let root = parent.join("ws");
        std::fs::create_dir(&root).unwrap();
        let builder = tool_std::registry_builder()
            .override_dependency(&SANDBOX, sandbox(&root))
            .override_dependency(&FS_LIMITS, limits)
            .override_dependency(&OUTPUT_STORE, Arc::new(MemoryStore::new()) as Arc<dyn OutputStore>);
        let registry = settings(builder).build().unwrap();
        Self { _dir: dir, parent, root, registry }
    }

    /// Writes `contents` to `path` relative to the root, creating parent directories.
    pub fn write(&self, path: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        write_file(&self.root.join(path), contents)
    }

    /// Writes `contents` to `path` relative to the parent of the root (outside the workspace).
    pub fn write_outside(&self, path: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        write_file(&self.parent.join(path), contents)
    }

    /// The registry of the standard tools rooted in this workspace.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Calls a tool in the default session.
    pub async fn call(&self, tool: &str, arguments: Value) -> ToolMessage {
        self.call_in(&ToolContext::new(), tool, arguments).await
    }

    /// Calls a tool with the given context.
    pub async fn call_in(&self, ctx: &ToolContext, tool: &str, arguments: Value) -> ToolMessage {
        self.registry.call(&ToolCall::new("call_1", tool, arguments.to_string()), ctx).await
    }

    /// The text of a call that must succeed.
    pub async fn ok(&self, tool: &str, arguments: Value) -> String {
        let message = self.call(tool, arguments).await;
        assert!(!message.is_error, "expected success, got error: {}", message.text());
        message.text().into_owned()
    }

    /// The text of a call that must fail.
    pub async fn err(&self, tool: &str, arguments: Value) -> String {
        let message = self.call(tool, arguments).await;
        assert!(message.is_error, "expected an error, got success: {}", message.text());
        message.text().into_owned()
    }
}

fn write_file(path: &Path, contents: impl AsRef<[u8]>) -> PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, contents).unwrap();
    path.to_path_buf()
}

/// The sha footer of `hex`.
pub fn sha_footer(hex: &str) -> String {
    format!("[read_metadata] content_sha256={hex}")
}

/// The SHA-256 of the empty input.
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// The lowercase hex SHA-256 of `bytes`.
pub fn sha256(bytes: impl AsRef<[u8]>) -> String {
    use sha2::Digest as _;
    format!("{:x}", sha2::Sha256::digest(bytes.as_ref()))
}

/// A JSON tool result parsed.
pub fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// The footer in place of the sha footer for a file of `size` bytes over a whole-file scan limit
/// of `limit` bytes that was not read to its end.
pub fn unhashed_footer(size: u64, limit: u64) -> String {
    format!(
        "[read_metadata] content_sha256 not computed: the file is {size} bytes, over the {limit}-byte whole-file \
         scan limit, and was not read to its end; write and edit work without expected_hash"
    )
}

/// Default limits but the given whole-file scan limit (bytes).
pub fn scan_limit(bytes: u64) -> FsLimits {
    FsLimits { read_whole_file_scan_max_bytes: bytes, ..FsLimits::default() }
}

/// A PNG signature and IHDR chunk of a `width` x `height` RGBA image.
pub fn png(width: u32, height: u32) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    bytes.extend(width.to_be_bytes());
    bytes.extend(height.to_be_bytes());
    bytes.extend([8, 6, 0, 0, 0, 0x9a, 0x38, 0xc4, 0x00]);
    bytes
}
