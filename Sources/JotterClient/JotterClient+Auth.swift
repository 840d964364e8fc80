import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import JotterAPI

extension JotterClient {
    /// `POST /auth/sessions` with `kind=token`: signs this client in as `name` — a new API
    /// token, which it sends from now on (`token`) — and returns the token, shown this once,
    /// to keep for a later run. A wrong name or password throws with `isUnauthorized` and
    /// leaves the client's token as it was.
    ///
    /// ```swift
    /// let issued = try await client.signIn(name: "ann", password: password, label: "laptop")
    /// let me = try await client.me()                  // ann
    /// try issued.token.write(toFile: tokenFile, atomically: true, encoding: .utf8)
    /// ```
    @discardableResult
    public func signIn(name: String, password: String, label: String = "", expiresIn seconds: Int? = nil) async throws(JotterClientError)
        -> IssuedToken
    {
        var request = makeRequest("POST", "/auth/sessions")
        var fields = [("name", name), ("password", password), ("kind", "token"), ("label", label)]
        if let seconds { fields.append(("expires_in", String(seconds))) }
        FormURLEncodedBody(fields).apply(to: &request)
        let issued = try await send(request, decoding: IssuedToken.self).value
        token = issued.token
        return issued
    }

    /// `DELETE /auth/sessions/current`: revokes the token this client sends, and signs the
    /// client out (`token` is nil afterwards, also when the token had already ended).
    ///
    /// ```swift
    /// try await client.signOut()
    /// ```
    public func signOut() async throws(JotterClientError) {
        do {
            _ = try await send(makeRequest("DELETE", "/auth/sessions/current"))
        } catch  where error.isUnauthorized {
            // Revoked or expired already: signed out all the same.
        }
        token = nil
    }

    /// `GET /auth/me`: who the token belongs to.
    public func me() async throws(JotterClientError) -> UserInfo {
        try await send(makeRequest("GET", "/auth/me"), decoding: SessionInfo.self).value.user
    }
}

extension JotterClient {
    /// `GET /users` (an administrator's token).
    public func users() async throws(JotterClientError) -> [UserInfo] {
        try await send(makeRequest("GET", "/users"), decoding: UserList.self).value.users
    }

    /// `POST /users` (an administrator's token): a new user.
    public func addUser(name: String, password: String, admin: Bool = false) async throws(JotterClientError) -> UserInfo {
        var request = makeRequest("POST", "/users")
        FormURLEncodedBody([("name", name), ("password", password), ("admin", admin ? "true" : "false")]).apply(to: &request)
        return try await send(request, decoding: UserInfo.self).value
    }

    /// `PUT /users/{name}/password` (an administrator's token); the user's sessions end.
    public func setPassword(user name: String, password: String) async throws(JotterClientError) {
        var request = makeRequest("PUT", "/users/" + Self.segment(name) + "/password")
        FormURLEncodedBody([("password", password)]).apply(to: &request)
        _ = try await send(request)
    }

    /// `DELETE /users/{name}` (an administrator's token), with the user's notes and uploads.
    public func removeUser(_ name: String) async throws(JotterClientError) {
        _ = try await send(makeRequest("DELETE", "/users/" + Self.segment(name)))
    }

    /// `GET /auth/tokens`: the signed-in user's API tokens, newest first.
    public func tokens() async throws(JotterClientError) -> [TokenInfo] {
        try await send(makeRequest("GET", "/auth/tokens"), decoding: TokenList.self).value.tokens
    }

    /// `POST /auth/tokens`: a new API token for the signed-in user, shown this once.
    public func createToken(label: String = "", expiresIn seconds: Int? = nil) async throws(JotterClientError) -> IssuedToken {
        var request = makeRequest("POST", "/auth/tokens")
        var fields = [("label", label)]
        if let seconds { fields.append(("expires_in", String(seconds))) }
        FormURLEncodedBody(fields).apply(to: &request)
        return try await send(request, decoding: IssuedToken.self).value
    }

    /// `DELETE /auth/tokens/{id}`: revokes one of the signed-in user's tokens.
    public func revokeToken(_ id: String) async throws(JotterClientError) -> TokenInfo {
        try await send(makeRequest("DELETE", "/auth/tokens/" + Self.segment(id)), decoding: TokenInfo.self).value
    }
}
