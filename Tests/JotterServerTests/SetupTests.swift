import Foundation
import Testing
import JotterTestSupport

/// `make run` installs only what serving needs; the test packages come with `make test`.
@Suite("Set-up scripts")
struct SetupTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Runs `scripts/install-deps ARGUMENTS` with apt replaced by a recorder, on a machine where
    /// nothing is installed; the packages it would install.
    func packages(_ arguments: [String]) throws -> [String] {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let log = folder.appendingPathComponent("apt.log")
        _ = try makeTool(folder, "dpkg-query", "exit 1")  // nothing is installed
        _ = try makeTool(folder, "apt-get", #"[ "$1" = install ] && echo "$@" >> "\#(log.path)"; exit 0"#)
        _ = try makeTool(folder, "sudo", #"exec "$@""#)
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = folder.path + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        let run = try runProgram([Self.root.appendingPathComponent("scripts/install-deps").path] + arguments, environment: environment)
        #expect(run.status == 0, "\(run.output)")
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        return text.split(whereSeparator: \.isWhitespace).map(String.init).filter { !$0.hasPrefix("-") && $0 != "install" }
    }

    func makeTool(_ folder: URL, _ name: String, _ body: String) throws -> URL {
        let url = folder.appendingPathComponent(name)
        try Data("#!/bin/sh\n\(body)\n".utf8).write(to: url)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: url.path)
        return url
    }

    /// The commands `make -n target` would run.
    func make(_ target: String) throws -> String {
        try runProgram(["make", "-n", "-C", Self.root.path, target], separateErrors: true).output
    }

    @Test(
        "serving installs the build libraries only; --test adds Chromium, its driver, Python, sqlite3, systemd, curl, PostgreSQL, nginx, HAProxy, zsh, fish and gdb"
    )
    func runtimeAndTestPackagesApart() throws {
        let serving = try packages([])
        #expect(
            Set(serving) == [
                "node-llhttp", "libnghttp2-dev", "libsqlite3-dev", "libssl-dev", "libarchive-dev", "libsodium-dev",
                "libpq-dev", "libcurl4-openssl-dev", "pkg-config",
            ])
        let testing = try packages(["--test"])
        #expect(
            Set(testing)
                == Set(serving).union([
                    "sqlite3", "python3", "python3-venv", "chromium", "chromium-driver", "systemd", "curl", "postgresql", "nginx", "haproxy", "zsh",
                    "fish", "gdb",
                ]))
    }

    @Test("make run asks for the serving packages, make test for the test packages")
    func makeTargets() throws {
        let run = try make("run").split(separator: "\n")
        #expect(run.contains("scripts/install-deps"))
        #expect(!run.contains { $0.contains("--test") || $0.contains("test-venv") })
        let test = try make("test").split(separator: "\n")
        #expect(test.contains("scripts/install-deps --test"))
    }
}
