import Foundation
import Glibc
import JotterCLICore
import JotterClient

/// The tokens `jotter login` keeps, one per server, in `$XDG_CONFIG_HOME/jotter/tokens`
/// (`~/.config/jotter/tokens`), readable by the user alone (mode 0600).
struct StoredTokens {
    let path: String

    init(environment: [String: String]) {
        let home = environment["HOME"] ?? NSHomeDirectory()
        let config = environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? home + "/.config"
        path = config + "/jotter/tokens"
    }

    /// Server URL → token.
    func all() -> [String: String] {
        guard let data = FileManager.default.contents(atPath: path),
            let tokens = try? JSONDecoder().decode([String: String].self, from: data)
        else { return [:] }
        return tokens
    }

    func token(for server: URL) -> String? { all()[Self.key(server)] }

    /// Writes the file (and its folder) with mode 0600 / 0700, replacing it atomically.
    func set(_ token: String?, for server: URL) throws {
        var tokens = all()
        tokens[Self.key(server)] = token
        let folder = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let temporary = path + ".tmp-\(getpid())"
        let data = try JSONEncoder().encode(tokens)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CommandFailure("cannot write \(temporary): \(String(cString: strerror(errno)))") }
        let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        fchmod(fd, 0o600)
        fsync(fd)
        close(fd)
        guard written == data.count, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw CommandFailure("cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }

    static func key(_ server: URL) -> String {
        var text = server.absoluteString.lowercased()
        while text.hasSuffix("/") { text.removeLast() }
        return text
    }
}

/// `jotter login [--server URL] [--name NAME]`.
struct LoginCommand: AsyncCommand, ParsableArguments {
    static let name = "login"
    static let summary = "Sign in and keep a token for the server."
    static let about = """
        Signs in with a name and password (asked on a terminal; else the password is the first
        line of standard input and --name is needed) and keeps the API token it gets in
        ~/.config/jotter/tokens (mode 0600), used by every command for that server.
        JOTTER_TOKEN or --token, when given, wins over it.
        """

    @Group(without: ClientOptions.jsonOption) var options: ClientOptions
    @Value(Option.text("--name", value: "NAME", help: "Your user name.")) var name: String?
    private(set) var stored = StoredTokens(environment: [:])

    mutating func validate(_ arguments: Arguments) throws { stored = StoredTokens(environment: arguments.environment) }

    func run(console: Console) async throws -> Int32 {
        let terminal = isatty(0) == 1
        guard
            let name = name
                ?? (terminal
                    ? {
                        print("Name: ", terminator: ""); return readLine()
                    }() : nil),
            !name.isEmpty
        else {
            throw UsageError("--name NAME is needed when standard input is not a terminal")
        }
        let password =
            terminal
            ? String(cString: getpass("Password: "))
            : console.readFirstLine()
        var configuration = options.configuration()
        configuration.token = nil
        configuration.retry = .never
        let client = JotterClient(baseURL: options.server, configuration: configuration)
        let host = ProcessInfo.processInfo.hostName
        do {
            let issued = try await client.signIn(name: name, password: password, label: "jotter login on \(host)")
            try stored.set(issued.token, for: options.server)
            console.out("Signed in to \(options.server.absoluteString) as \(issued.user.name).\n")
            return ExitCode.success
        } catch let error as JotterClientError where error.isUnauthorized {
            throw CommandFailure("the name or the password is wrong", status: ExitCode.failure)
        } catch let error as JotterClientError {
            throw CommandFailure(error)
        }
    }
}

/// `jotter logout [--server URL]`.
struct LogoutCommand: AsyncCommand, ParsableArguments {
    static let name = "logout"
    static let summary = "Revoke and forget the token kept for the server."
    static let about = "Revokes the token `jotter login` kept for the server and removes it from ~/.config/jotter/tokens."

    @Group(without: ClientOptions.jsonOption) var options: ClientOptions
    private(set) var stored = StoredTokens(environment: [:])

    mutating func validate(_ arguments: Arguments) throws { stored = StoredTokens(environment: arguments.environment) }

    func run(console: Console) async throws -> Int32 {
        guard let token = stored.token(for: options.server) else {
            console.out("Not signed in to \(options.server.absoluteString).\n")
            return ExitCode.success
        }
        var configuration = options.configuration()
        configuration.token = token
        configuration.retry = .never
        do {
            try await JotterClient(baseURL: options.server, configuration: configuration).signOut()
        } catch  where error.isUnauthorized {
            // Revoked or expired already: forgetting it is all that is left.
        } catch {
            throw CommandFailure(error)
        }
        try stored.set(nil, for: options.server)
        console.out("Signed out of \(options.server.absoluteString).\n")
        return ExitCode.success
    }
}
