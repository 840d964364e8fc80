import Foundation
import JotterServer
import JotterStore
import JotterTestSupport

/// Users and their tokens on a `TestApp`.
extension TestApp {
    public struct AccountFailure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Adds a user straight to the store, as `jotter users add` on the data folder does.
    @discardableResult
    public func addUser(_ name: String, password: String? = nil, admin: Bool = false) throws -> UserRecord {
        let hash = try PasswordHash.make(password ?? "password of \(name)")
        guard case .user(let user) = try app.accounts.store.perform(.addUser(name: name, passwordHash: hash, isAdmin: admin)) else {
            throw AccountFailure(description: "user \(name) not added")
        }
        app.accounts.usersChanged()
        return user
    }

    /// Signs `name` in for an API token (`POST /auth/sessions` with `kind=token`).
    public func token(_ name: String, password: String? = nil, extra: String = "") throws -> String {
        let form = "name=\(name)&password=\(FormEscape.escape(password ?? "password of \(name)"))&kind=token" + extra
        let response = try request("POST", "/auth/sessions", headers: [("Content-Type", "application/x-www-form-urlencoded")], body: form)
        guard response.status == 201, let token = try response.json()["token"] as? String else {
            throw AccountFailure(description: "sign-in of \(name): \(response.status) \(response.text)")
        }
        return token
    }

    /// A request with `Authorization: Bearer token`.
    public func request(_ method: String, _ target: String, token: String?, headers: [(String, String)] = [], body: String = "") throws
        -> WireResponse
    {
        var all = headers
        if let token { all.append(("Authorization", "Bearer \(token)")) }
        if !body.isEmpty && !all.contains(where: { $0.0 == "Content-Type" }) { all.append(("Content-Type", "application/x-www-form-urlencoded")) }
        return try request(method, target, headers: all, body: body)
    }
}

public enum FormEscape {
    public static func escape(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text
    }
}
