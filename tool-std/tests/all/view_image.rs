//! view_image: the type from magic bytes, width and height from the header, errors without an
//! image part, size limits, and the text fallback for models that cannot take images.

use crate::common;

use base64::Engine as _;
use common::png;
use serde_json::{Value, json};
use tool_runtime::{ContentPart, MessageContent, Registry, ToolCall, ToolContext, ToolMessage};
use tool_runtime::{ImageDetail, ImageSupport};
use tool_std::sandbox::{SANDBOX, Sandbox};

struct Images {
    dir: tempfile::TempDir,
    registry: Registry,
}

impl Images {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let registry = tool_std::registry_builder()
            .sets(["media"])
            .override_dependency(&SANDBOX, Sandbox::new(dir.path()).unwrap())
            .build()
            .unwrap();
        Self { dir, registry }
    }

    fn write(&self, name: &str, bytes: &[u8]) {
        std::fs::write(self.dir.path().join(name), bytes).unwrap();
    }

    async fn view(&self, support: ImageSupport, arguments: Value) -> ToolMessage {
        let ctx = ToolContext::builder().image_support(support).build();
        self.registry.call(&ToolCall::new("call_1", "view_image", arguments.to_string()), &ctx).await
    }

    async fn error(&self, arguments: Value) -> ToolMessage {
        let message = self.view(ImageSupport::Supported, arguments).await;
        assert!(message.is_error, "expected an error, got {}", message.text());
        message
    }
}

/// A JPEG with a JFIF APP0 segment and a baseline SOF0 of `width` x `height`.
fn jpeg(width: u16, height: u16) -> Vec<u8> {
    let mut bytes = vec![0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10];
    bytes.extend(b"JFIF\0\x01\x01\x00\x00\x01\x00\x01\x00\x00");
    bytes.extend([0xFF, 0xC0, 0x00, 0x11, 0x08]);
    bytes.extend(height.to_be_bytes());
    bytes.extend(width.to_be_bytes());
    bytes.extend([0x03, 0x01, 0x22, 0x00, 0x02, 0x11, 0x01, 0x03, 0x11, 0x01, 0xFF, 0xD9]);
    bytes
}

fn gif89a(width: u16, height: u16) -> Vec<u8> {
    let mut bytes = b"GIF89a".to_vec();
    bytes.extend(width.to_le_bytes());
    bytes.extend(height.to_le_bytes());
    bytes.extend([0x80, 0x00, 0x00, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0x3B]);
    bytes
}

/// An extended WebP: `RIFF....WEBPVP8X` with the canvas size minus one in 24-bit fields.
fn webp_vp8x(width: u32, height: u32) -> Vec<u8> {
    let mut bytes = b"RIFF\x16\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x00\x00\x00\x00".to_vec();
    bytes.extend(&(width - 1).to_le_bytes()[..3]);
    bytes.extend(&(height - 1).to_le_bytes()[..3]);
    bytes
}

fn parts(message: &ToolMessage) -> &[ContentPart] {
    match &message.content {
        MessageContent::Parts(parts) => parts,
        MessageContent::Text(text) => panic!("expected parts, got text: {text}"),
    }
}

#[tokio::test]
async fn a_png_gives_a_text_part_with_its_size_and_the_image() {
    let images = Images::new();
    let bytes = png(123, 321);
    images.write("shot.png", &bytes);

    let message = images.view(ImageSupport::Supported, json!({"file_path": "shot.png"})).await;

    assert!(!message.is_error, "{}", message.text());
    assert_eq!(
        parts(&message),
        [
            ContentPart::text("Image loaded: shot.png (123x321, image/png)"),
            ContentPart::Image {
                data: base64::engine::general_purpose::STANDARD.encode(&bytes),
                media_type: "image/png".to_owned(),
                detail: Some(ImageDetail::Auto)
            },
        ]
    );
}

#[tokio::test]
async fn jpeg_bytes_named_png_are_a_jpeg() {
    let images = Images::new();
    images.write("photo.png", &jpeg(640, 480));

    let message = images.view(ImageSupport::Supported, json!({"file_path": "photo.png"})).await;

    assert_eq!(parts(&message)[0], ContentPart::text("Image loaded: photo.png (640x480, image/jpeg)"));
    assert!(matches!(&parts(&message)[1], ContentPart::Image { media_type, .. } if media_type == "image/jpeg"));
}

#[tokio::test]
async fn a_gif89a_is_recognised() {
    let images = Images::new();
    images.write("anim.bin", &gif89a(16, 9));

    let message = images.view(ImageSupport::Supported, json!({"file_path": "anim.bin"})).await;

    assert_eq!(parts(&message)[0], ContentPart::text("Image loaded: anim.bin (16x9, image/gif)"));
}

#[tokio::test]
async fn an_extended_webp_is_recognised() {
    let images = Images::new();
    images.write("pic.webp", &webp_vp8x(1920, 1080));

    let message = images.view(ImageSupport::Supported, json!({"file_path": "pic.webp"})).await;

    assert_eq!(parts(&message)[0], ContentPart::text("Image loaded: pic.webp (1920x1080, image/webp)"));
}

#[tokio::test]
async fn svg_text_named_png_is_an_error_without_an_image_part() {
    let images = Images::new();
    images.write("logo.png", br#"<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="10"/>"#);

    let message = images.error(json!({"file_path": "logo.png"})).await;

    assert_eq!(
        message.content,
        MessageContent::Text(
            "Not a supported image: logo.png is SVG text; view_image shows PNG, JPEG, GIF and WebP files".to_owned()
        )
    );
}

#[tokio::test]
async fn a_png_cut_after_8_bytes_is_an_error_without_an_image_part() {
    let images = Images::new();
    images.write("cut.png", &png(10, 10)[..8]);

    let message = images.error(json!({"file_path": "cut.png"})).await;

    let MessageContent::Text(text) = &message.content else { panic!("an error carries text only") };
    assert!(text.starts_with("Damaged image: cut.png looks like image/png but its header cannot be read ("), "{text}");
    assert!(text.ends_with("); the file may be cut short"), "{text}");
}

#[tokio::test]
async fn a_text_file_is_an_error() {
    let images = Images::new();
    images.write("notes.png", b"just some notes\n");

    let message = images.error(json!({"file_path": "notes.png"})).await;

    assert_eq!(
        message.text(),
        "Not a supported image: notes.png is text; view_image shows PNG, JPEG, GIF and WebP files"
    );
}

#[tokio::test]
async fn unknown_binary_bytes_are_an_error() {
    let images = Images::new();
    images.write("blob.png", &[0x00, 0x01, 0xFE, 0xFF, 0x80, 0x81, 0x00, 0x00, 0x13, 0x37, 0xC0, 0xDE]);

    assert_eq!(
        images.error(json!({"file_path": "blob.png"})).await.text(),
        "Not a supported image: blob.png is of an unknown format; view_image shows PNG, JPEG, GIF and WebP files"
    );
}

#[tokio::test]
async fn a_file_over_max_bytes_is_refused() {
    let images = Images::new();
    images.write("big.png", &png(1, 1));

    assert_eq!(
        images.error(json!({"file_path": "big.png", "max_bytes": 10})).await.text(),
        "Image too large: big.png is 33 bytes, over max_bytes=10; raise max_bytes (up to 10485760) or use a smaller \
         image"
    );
}

#[tokio::test]
async fn max_bytes_over_10_mib_is_refused() {
    let images = Images::new();
    images.write("a.png", &png(1, 1));

    assert_eq!(
        images.error(json!({"file_path": "a.png", "max_bytes": 10_485_761})).await.text(),
        "invalid arguments for `view_image`: `max_bytes`: must be at most 10485760; got 10485761"
    );
}

#[tokio::test]
async fn a_missing_file_is_an_error() {
    let images = Images::new();

    assert_eq!(images.error(json!({"file_path": "none.png"})).await.text(), "File not found: none.png");
}

#[tokio::test]
async fn a_path_outside_the_workspace_is_refused() {
    let images = Images::new();

    assert_eq!(
        images.error(json!({"file_path": "../outside.png"})).await.text(),
        "Path escapes workspace: ../outside.png"
    );
}

#[tokio::test]
async fn a_bad_detail_is_refused_listing_the_choices() {
    let images = Images::new();
    images.write("a.png", &png(1, 1));

    assert_eq!(
        images.error(json!({"file_path": "a.png", "detail": "max"})).await.text(),
        "invalid arguments for `view_image`: `detail`: unknown variant `max`, expected one of `auto`, `low`, `high`"
    );
}

#[tokio::test]
async fn a_model_without_image_support_gets_a_text_description() {
    let images = Images::new();
    images.write("shot.png", &png(123, 321));

    let message = images.view(ImageSupport::Unsupported, json!({"file_path": "shot.png", "detail": "high"})).await;

    assert!(!message.is_error);
    assert_eq!(
        message.content,
        MessageContent::Text(
            "Image loaded: shot.png (123x321, image/png)\nThe current model cannot view images, so only this \
             description is returned: image/png, 123 by 321 pixels, 33 bytes."
                .to_owned()
        )
    );
}

#[tokio::test]
async fn an_unknown_image_capability_takes_the_text_route() {
    let images = Images::new();
    images.write("shot.png", &png(2, 3));

    let message = images
        .registry
        .call(&ToolCall::new("c", "view_image", r#"{"file_path":"shot.png"}"#), &ToolContext::new())
        .await;

    assert!(matches!(message.content, MessageContent::Text(_)));
    assert!(
        message.text().starts_with("Image loaded: shot.png (2x3, image/png)\nThe current model cannot view images")
    );
}

#[test]
fn magic_bytes_decide_the_type() {
    use tool_std::media::detect_image_mime;

    assert_eq!(detect_image_mime(&png(1, 1)), Some("image/png"));
    assert_eq!(detect_image_mime(&jpeg(1, 1)), Some("image/jpeg"));
    assert_eq!(detect_image_mime(b"GIF87a\x01\x00\x01\x00"), Some("image/gif"));
    assert_eq!(detect_image_mime(&webp_vp8x(2, 2)), Some("image/webp"));
    assert_eq!(detect_image_mime(b"RIFF\x16\x00\x00\x00WAVEfmt "), None);
    assert_eq!(detect_image_mime(b""), None);
}

#[tokio::test]
async fn the_detail_asked_for_reaches_the_image_part() {
    let images = Images::new();
    images.write("shot.png", &png(4, 3));

    let message = images.view(ImageSupport::Supported, json!({"file_path": "shot.png", "detail": "high"})).await;

    let detail = parts(&message).iter().find_map(|p| match p {
        ContentPart::Image { detail, .. } => Some(*detail),
        _ => None,
    });
    assert_eq!(detail, Some(Some(ImageDetail::High)));
}
