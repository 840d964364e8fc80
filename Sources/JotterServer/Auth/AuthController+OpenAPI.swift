import JotterAPI
import JotterHTTP
import JotterWire

/// The OpenAPI operations of `AuthController`.
enum AuthOperations {
    static let unauthorized = OpenAPIResponse.problem("no valid token or session (with `WWW-Authenticate`)")
    static let malformed = OpenAPIResponse.problem("the body is malformed (bad JSON, percent-encoding, UTF-8 or multipart)")
    /// The bounds `AuthController.expiry` enforces, as a pattern (a form field is text): empty,
    /// or 60 to 315360000 (ten years), leading zeros allowed.
    static let expiresInPattern =
        #"^(|0*([6-9][0-9]|[1-9][0-9]{2,7}|[12][0-9]{8}|30[0-9]{7}|31[0-4][0-9]{6}|315[0-2][0-9]{5}|3153[0-5][0-9]{4}|315360000))$"#
    static let expiresIn = JSONSchema.string(
        pattern: expiresInPattern,
        description: "seconds until it expires, 60 to 315360000 (ten years); empty is as if absent")

    static let signIn = OpenAPIOperation(
        operationID: "signIn", summary: "Sign in",
        description:
            "A name and password give a web session — the `jotter_session` cookie (HttpOnly, SameSite=Lax, Secure under TLS, Max-Age) and its CSRF token — or, with `kind=token`, an API token shown this once. Sign-in is public; a wrong name costs as long as a wrong password.",
        tags: ["auth"],
        requestBody: .fields(
            .object(
                [
                    "name": .string(minLength: 1), "password": .string(minLength: 1),
                    "kind": .string(enum: ["session", "token"], description: "`session` when absent"),
                    "label": .string(description: "what the session or token is for"),
                    "expires_in": expiresIn,
                ], optional: ["kind", "label", "expires_in"]), required: true),
        responses: [
            201: OpenAPIResponse(
                "signed in: a `SessionInfo` with the cookie, or an `IssuedToken`",
                content: [
                    "application/json": .oneOf([.ref(SessionInfo.self), .ref(IssuedToken.self)])
                ], headers: ["Set-Cookie": OpenAPIHeader("for a session: the session cookie", required: false)]),
            400: malformed,
            401: .problem("the name or the password is wrong"),
            409: .problem("with `kind=token`: the user holds the most tokens one user may have (revoke one first)"),
            422: .problem("the name or the password is missing, `kind` is neither `session` nor `token`, or `expires_in` is out of range"),
            429: .problem(
                "too many sign-ins from this address, or failed ones for this name from this address or from everywhere; `Retry-After` says when to try again"
            ),
            503: .problem("too many passwords are being checked right now, or the accounts cannot be read; `Retry-After` says when to try again"),
        ])

    static let signOut = OpenAPIOperation(
        operationID: "signOut", summary: "Sign out",
        description: "Revokes the session or token this request carries; a session's cookie is cleared.",
        tags: ["auth"],
        responses: [204: .empty("signed out"), 401: unauthorized])

    static let me = OpenAPIOperation(
        operationID: "me", summary: "The signed-in user", tags: ["auth"],
        responses: [200: .json(.ref(SessionInfo.self), "the user, and for a session its CSRF token"), 401: unauthorized])

    static let tokens = OpenAPIOperation(
        operationID: "listTokens", summary: "The signed-in user's API tokens", tags: ["auth"],
        responses: [200: .json(.ref(TokenList.self), "the tokens, never their secrets"), 401: unauthorized])

    static let createToken = OpenAPIOperation(
        operationID: "createToken", summary: "Create an API token", tags: ["auth"],
        requestBody: .fields(.object(["label": .string(), "expires_in": expiresIn], optional: ["label", "expires_in"]), required: false),
        responses: [
            201: .json(.ref(IssuedToken.self), "the token, shown this once"), 400: malformed, 401: unauthorized,
            409: .problem("the user holds the most tokens one user may have (revoke one first)"), 422: .problem("`expires_in` is out of range"),
        ])

    static let revokeToken = OpenAPIOperation(
        operationID: "revokeToken", summary: "Revoke an API token",
        description: "Refused from the next request on; the event streams opened with it end.",
        tags: ["auth"],
        parameters: [.path("id", .string(pattern: "^[0-9]+$"), description: "the token's id")],
        responses: [200: .json(.ref(TokenInfo.self), "the revoked token"), 401: unauthorized, 404: .problem("the user has no token with this id")])
}
