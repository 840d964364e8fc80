import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import JotterAPI

extension JotterClient {
    /// `POST /auth/sessions` with `kind=token`: a new API token for `name`, shown this once.
    /// A wrong name or password throws with `isUnauthorized`.
    ///
    /// ```swift
    /// let issued = try await client.signIn(name: "ann", password: password, label: "laptop")
    /// configuration.token = issued.token
    /// ```
    public func signIn(name: String, password: String, label: String = "", expiresIn seconds: Int? = nil) async throws(JotterClientError) -> IssuedToken {
        var request = makeRequest("POST", "/auth/sessions")
        var fields = [("name", name), ("password", password), ("kind", "token"), ("label", label)]
        if let seconds { fields.append(("expires_in", String(seconds))) }
        FormURLEncodedBody(fields).apply(to: &request)
        return try await send(request, decoding: IssuedToken.self).value
    }

    /// `DELETE /auth/sessions/current`: revokes the token this client sends.
    public func signOut() async throws(JotterClientError) {
        _ = try await send(makeRequest("DELETE", "/auth/sessions/current"))
    }

    /// `GET /auth/me`: who the token belongs to.
    public func me() async throws(JotterClientError) -> UserInfo {
        try await send(makeRequest("GET", "/auth/me"), decoding: SessionInfo.self).value.user
    }
}
