use tool_runtime::prelude::*;

/// A client made in `main`: `Send + Sync`, not `Clone`.
pub struct Client {
    pub base_url: String,
}

static CLIENT: DependencyKey<Client> = DependencyKey::provided("client");

/// Says where the client goes.
#[tool]
fn base_url(#[depends(CLIENT)] client: Client) -> String {
    client.base_url
}

fn main() {}
