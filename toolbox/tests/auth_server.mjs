// An OAuth 2.1 authorization server for the tests: oauth2-mock-server (npm) on a free loopback
// port, with one RS256 key. Usage: node auth_server.mjs NODE_MODULES_DIR [CLIENT=SCOPES]...
//
// Prints `issuer URL` on standard output once it listens, and serves until it is killed.
// Client credentials tokens name the client as their subject (`sub` and `client_id`, as RFC 9068
// says of a client's own token), and every token's `aud` is the `resource` the client asked for
// (RFC 8707), which oauth2-mock-server does not do by itself. A client named `CLIENT=SCOPES`
// (`bo=tools:read`, scopes separated by commas) is granted only those of the scopes it asks for,
// as a real authorization server grants a client only what it may have; other clients get what
// they ask for. The authorization code grant asks for the scopes of its authorization request
// (oauth2-mock-server approves it at once, checking PKCE at the token endpoint).
import { pathToFileURL } from "node:url";
import path from "node:path";

const modules = process.argv[2];
if (!modules) {
  console.error("usage: node auth_server.mjs NODE_MODULES_DIR");
  process.exit(2);
}
const allowed = new Map(
  process.argv.slice(3).map((arg) => {
    const [client, scopes] = arg.split("=");
    return [client, scopes.split(",")];
  }),
);
const entry = pathToFileURL(path.join(modules, "oauth2-mock-server", "dist", "index.mjs"));
const { OAuth2Server } = await import(entry.href);

const server = new OAuth2Server();
await server.issuer.keys.generate("RS256");

/** The client of a token request: HTTP Basic, else `client_id` in the body. */
function clientOf(req) {
  const header = req.headers.authorization ?? "";
  if (header.startsWith("Basic ")) {
    const [id] = Buffer.from(header.slice(6), "base64").toString("utf8").split(":");
    return decodeURIComponent(id);
  }
  return req.body?.client_id;
}

/** The `scope` of the authorization request of each authorization code issued. */
const scopesOfCodes = new Map();

server.service.on("beforeAuthorizeRedirect", (redirect, req) => {
  const code = redirect.url.searchParams.get("code");
  if (code) {
    scopesOfCodes.set(code, typeof req.query.scope === "string" ? req.query.scope : "");
  }
});

/** The scopes of a token request that its client is granted, space-separated. */
function granted(req) {
  const body = req.body ?? {};
  const scope = body.grant_type === "authorization_code" ? scopesOfCodes.get(body.code) : body.scope;
  const asked = (scope ?? "").split(" ").filter((s) => s);
  const may = allowed.get(clientOf(req));
  return (may ? asked.filter((s) => may.includes(s)) : asked).join(" ");
}

// Clients authenticate at the token endpoint with their secret, in HTTP Basic or in the body
// (oauth2-mock-server advertises only `none`, and checks no secret).
server.service.on("beforeWellKnownOpenIdConfiguration", (response) => {
  response.body.token_endpoint_auth_methods_supported = ["client_secret_basic", "client_secret_post", "none"];
});

server.service.on("beforeResponse", (response, req) => {
  if (response.body?.access_token) {
    response.body.scope = granted(req);
  }
});

server.service.on("beforeTokenSigning", (token, req) => {
  token.payload.scope = granted(req);
  const body = req.body ?? {};
  if (body.resource) {
    token.payload.aud = body.resource;
  }
  const client = clientOf(req);
  if (body.grant_type === "client_credentials" && client) {
    token.payload.sub = client;
    token.payload.client_id = client;
  }
});

await server.start(0, "127.0.0.1");
// The issuer as the loopback address it listens on (oauth2-mock-server would say `localhost`).
server.issuer.url = `http://127.0.0.1:${server.address().port}`;
console.log(`issuer ${server.issuer.url}`);
