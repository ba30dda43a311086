//! The resources, resource template, prompts and completion the conformance suite reads by name.

use tool_mcp::{
    Completes, McpServerBuilder, Prompt, PromptMessage, RequestError, Resource, ResourceTemplate, TemplateError,
};
use tool_runtime::talk::Elicitation;
use tool_runtime::{ContentPart, ResourceContents};

use super::PIXEL_PNG;

/// The context a prompt asks the user for.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Context {
    context: String,
}

/// The values `arg1` of `test_prompt_with_arguments` completes to.
const ARG1_VALUES: [&str; 3] = ["test", "testing", "tested"];

/// `builder` with the suite's fixtures declared.
pub(crate) fn declare(builder: McpServerBuilder) -> Result<McpServerBuilder, TemplateError> {
    let template = ResourceTemplate::new("test://template/{id}/data", "template-data")?
        .description("A JSON document for any id.")
        .mime_type("application/json");
    Ok(builder
        .resource(
            Resource::new("test://static-text", "static-text")
                .description("A static text resource.")
                .mime_type("text/plain"),
            |_| async { Ok(ResourceContents::Text("This is the content of the static text resource.".to_owned())) },
        )
        .resource(
            Resource::new("test://static-binary", "static-binary")
                .description("A 1x1 PNG image.")
                .mime_type("image/png"),
            |_| async { Ok(ResourceContents::Blob(PIXEL_PNG.to_owned())) },
        )
        .resource_template(template, |request| async move {
            let id = &request.variables["id"];
            let data = serde_json::json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
            Ok(ResourceContents::Text(data.to_string()))
        })
        .prompt(Prompt::new("test_simple_prompt").description("A prompt without arguments."), |_| async {
            Ok(vec![PromptMessage::user(ContentPart::text("This is a simple prompt for testing."))])
        })
        .prompt(
            Prompt::new("test_prompt_with_arguments")
                .description("A prompt with two arguments.")
                .argument("arg1", "First test argument")
                .argument("arg2", "Second test argument"),
            |request| async move {
                let (arg1, arg2) = (&request.arguments["arg1"], &request.arguments["arg2"]);
                let text = format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'");
                Ok(vec![PromptMessage::user(ContentPart::text(text))])
            },
        )
        .prompt(
            Prompt::new("test_prompt_with_embedded_resource")
                .description("A prompt embedding the resource it is given.")
                .argument("resourceUri", "URI of the resource to embed"),
            |request| async move {
                let uri = &request.arguments["resourceUri"];
                Ok(vec![
                    PromptMessage::user(ContentPart::resource_text(
                        uri,
                        Some("text/plain".to_owned()),
                        "Embedded resource content for testing.",
                    )),
                    PromptMessage::user(ContentPart::text("Please process the embedded resource above.")),
                ])
            },
        )
        .prompt(Prompt::new("test_prompt_with_image").description("A prompt with an image."), |_| async {
            Ok(vec![
                PromptMessage::user(ContentPart::image(PIXEL_PNG, "image/png")),
                PromptMessage::user(ContentPart::text("Please analyze the image above.")),
            ])
        })
        .prompt(
            Prompt::new("test_input_required_result_prompt")
                .description("A prompt that asks the user for its context."),
            |request| async move {
                let answer =
                    request.ctx.elicit::<Context>("What context should the prompt use?").key("user_context").await?;
                let context = match answer {
                    Elicitation::Accept(Context { context }) => context,
                    Elicitation::Decline | Elicitation::Cancel => "none given".to_owned(),
                };
                Ok(vec![PromptMessage::user(ContentPart::text(format!("Answer in this context: {context}")))])
            },
        )
        .completion(Completes::prompt_argument("test_prompt_with_arguments", "arg1"), |request| async move {
            let values = ARG1_VALUES.iter().filter(|v| v.starts_with(&request.value)).map(|v| (*v).to_owned());
            Ok::<_, RequestError>(values.collect())
        }))
}
