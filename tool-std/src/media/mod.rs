//! The "media" set: [`view_image()`], a local image shown to the model.
//!
//! The image type comes from the file's first bytes ([`detect_image_mime`]), never from its name:
//! PNG, JPEG, GIF (87a and 89a) and WebP (lossy `VP8 `, lossless `VP8L` and extended `VP8X`).
//! Width and height are read from the header (the `imagesize` crate); a file whose header cannot be
//! read (cut short, damaged) is an error, as are SVG, text and unknown bytes. An error never
//! carries an image part.
//!
//! Whether the model can take images is the context's [`ImageSupport`]
//! ([`ToolContext::image_support`], default [`ImageSupport::Unknown`]). Only
//! [`ImageSupport::Supported`] sends pixels; `Unknown` and `Unsupported` give a text description
//! instead, since an image a provider silently drops is worse than a description. Set it per model
//! on the context of the calls:
//!
//! ```
//! use tool_runtime::{ImageSupport, ToolContext};
//!
//! let ctx = ToolContext::builder().image_support(ImageSupport::Supported).build();
//! # let _ = ctx;
//! ```

use base64::Engine as _;
pub use tool_runtime::ImageDetail;
use tool_runtime::{ContentPart, ImageSupport, ToolContext, ToolResult, tool};

use crate::sandbox::{Kind, OpenError, SANDBOX, Sandbox, SandboxError, read_capped};

/// The default `max_bytes` of `view_image`: 5 MiB.
pub const DEFAULT_MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;

/// The largest `max_bytes` a call may ask for: 10 MiB.
pub const MAX_IMAGE_BYTES: u64 = 10 * 1024 * 1024;

/// Why `view_image` failed. The `Display` text is what the model reads; no image part is sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ImageError {
    /// The sandbox refused the path.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// Nothing exists at the path.
    #[error("File not found: {path}")]
    NotFound {
        /// The path as given.
        path: String,
    },
    /// The path is a directory (a FIFO, socket or device node is the sandbox's
    /// [`SandboxError::NotRegularFile`]).
    #[error("Not a file: {path}; view_image opens an image file")]
    NotAFile {
        /// The path as given.
        path: String,
    },
    /// `max_bytes` is 0 or over [`MAX_IMAGE_BYTES`].
    #[error("max_bytes must be between 1 and {max}, got {value}")]
    MaxBytes {
        /// The value given.
        value: u64,
        /// [`MAX_IMAGE_BYTES`].
        max: u64,
    },
    /// The file is larger than `max_bytes`.
    #[error(
        "Image too large: {path} is {size} bytes, over max_bytes={max_bytes}; raise max_bytes (up to {limit}) or \
         use a smaller image"
    )]
    TooLarge {
        /// The path as given.
        path: String,
        /// The file's size in bytes.
        size: u64,
        /// The cap of the call.
        max_bytes: u64,
        /// [`MAX_IMAGE_BYTES`].
        limit: u64,
    },
    /// The bytes are not a PNG, JPEG, GIF or WebP image.
    #[error("Not a supported image: {path} is {found}; view_image shows PNG, JPEG, GIF and WebP files")]
    NotAnImage {
        /// The path as given.
        path: String,
        /// What the bytes look like: `SVG text`, `text`, `empty` or `of an unknown format`.
        found: &'static str,
    },
    /// The image's header cannot be read.
    #[error(
        "Damaged image: {path} looks like {media_type} but its header cannot be read ({reason}); the file may be cut short"
    )]
    Damaged {
        /// The path as given.
        path: String,
        /// The type from the magic bytes.
        media_type: &'static str,
        /// The header reader's message.
        reason: String,
    },
    /// Any other I/O failure.
    #[error("Cannot read {path}: {message}")]
    Io {
        /// The path as given.
        path: String,
        /// The operating system's message.
        message: String,
    },
}

/// The MIME type of image bytes from their magic numbers: the output layer's rule,
/// [`tool_runtime::output::detect_image_mime`], so that a file `view_image` shows and an image a
/// tool returns are told apart alike.
pub use tool_runtime::output::detect_image_mime;

/// What bytes that are no supported image look like, for the error.
fn describe_non_image(bytes: &[u8]) -> &'static str {
    if bytes.is_empty() {
        return "empty";
    }
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]).to_ascii_lowercase();
    if head.contains("<svg") {
        "SVG text"
    } else if std::str::from_utf8(&bytes[..bytes.len().min(4096)]).is_ok() || head.trim_start().starts_with('<') {
        "text"
    } else {
        "of an unknown format"
    }
}

/// Look at a local PNG, JPEG, GIF or WebP image. For text files use read.
#[tool(set = "media", blocking, tags(read_only))]
pub fn view_image(
    /// Relative to the workspace root.
    file_path: String,
    /// How closely to look (default auto).
    detail: Option<ImageDetail>,
    /// Largest file accepted in bytes (default 5242880).
    #[arg(range(min = 1, max = 10485760))]
    max_bytes: Option<u64>,
    #[depends(SANDBOX)] sandbox: Sandbox,
    ctx: &ToolContext,
) -> Result<ToolResult, ImageError> {
    let max_bytes = max_bytes.unwrap_or(DEFAULT_MAX_IMAGE_BYTES);
    if max_bytes == 0 || max_bytes > MAX_IMAGE_BYTES {
        return Err(ImageError::MaxBytes { value: max_bytes, max: MAX_IMAGE_BYTES });
    }
    let io = |e: std::io::Error| ImageError::Io { path: file_path.clone(), message: e.to_string() };
    // Opened through the root handle; a FIFO, socket or device node is refused by the sandbox.
    let file = match sandbox.open(&file_path) {
        Ok((file, Kind::File)) => file,
        Ok((_, Kind::Directory)) => return Err(ImageError::NotAFile { path: file_path }),
        Err(OpenError::Refused(refused)) => return Err(refused.into()),
        Err(OpenError::NotFound(_)) => return Err(ImageError::NotFound { path: file_path }),
        Err(OpenError::Io(e)) => return Err(io(e)),
    };
    let size = file.metadata().map_err(io)?.len();
    if size > max_bytes {
        return Err(ImageError::TooLarge { path: file_path, size, max_bytes, limit: MAX_IMAGE_BYTES });
    }
    // At most one byte more than allowed is read: the file may have grown since the fstat.
    let Some(bytes) = read_capped(&file, max_bytes).map_err(io)? else {
        return Err(ImageError::TooLarge { path: file_path, size: max_bytes + 1, max_bytes, limit: MAX_IMAGE_BYTES });
    };
    let Some(media_type) = detect_image_mime(&bytes) else {
        return Err(ImageError::NotAnImage { path: file_path, found: describe_non_image(&bytes) });
    };
    let size = imagesize::blob_size(&bytes).map_err(|e| ImageError::Damaged {
        path: file_path.clone(),
        media_type,
        reason: e.to_string(),
    })?;
    let header = format!("Image loaded: {file_path} ({}x{}, {media_type})", size.width, size.height);
    if ctx.image_support() != ImageSupport::Supported {
        return Ok(ToolResult::text(format!(
            "{header}\nThe current model cannot view images, so only this description is returned: {media_type}, {} \
             by {} pixels, {} bytes.",
            size.width,
            size.height,
            bytes.len()
        )));
    }
    let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
    Ok(ToolResult::Parts(vec![
        ContentPart::text(header),
        ContentPart::Image { data, media_type: media_type.to_owned(), detail: Some(detail.unwrap_or_default()) },
    ]))
}
