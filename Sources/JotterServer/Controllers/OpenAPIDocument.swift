/// The OpenAPI 3.1 document served at `/openapi.json` (kept exact by `OpenAPITests`).
enum OpenAPIDocument {
    static let json = #"""
{
  "openapi": "3.1.0",
  "info": {
    "title": "Jotter",
    "version": "1",
    "description": "Notes, file uploads and hello. Every error is application/problem+json (RFC 9457)."
  },
  "servers": [
    {
      "url": "http://127.0.0.1:8080"
    }
  ],
  "paths": {
    "/hello": {
      "get": {
        "summary": "Hello",
        "parameters": [
          {
            "name": "name",
            "in": "query",
            "required": false,
            "schema": {
              "type": "string"
            }
          }
        ],
        "responses": {
          "200": {
            "description": "`Hello <name>!` as text, or JSON with `Accept: application/json`",
            "content": {
              "text/plain": {
                "schema": {
                  "type": "string",
                  "example": "Hello Bob!"
                }
              },
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/HelloMessage"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem"
          },
          "415": {
            "$ref": "#/components/responses/Problem"
          },
          "422": {
            "$ref": "#/components/responses/Problem"
          }
        }
      },
      "post": {
        "summary": "Hello (name from the body wins)",
        "parameters": [
          {
            "name": "name",
            "in": "query",
            "required": false,
            "schema": {
              "type": "string"
            }
          }
        ],
        "requestBody": {
          "required": false,
          "content": {
            "application/x-www-form-urlencoded": {
              "schema": {
                "type": "object",
                "properties": {
                  "name": {
                    "type": "string"
                  }
                }
              }
            },
            "application/json": {
              "schema": {
                "type": "object",
                "properties": {
                  "name": {
                    "type": "string"
                  }
                }
              }
            },
            "multipart/form-data": {
              "schema": {
                "type": "object",
                "properties": {
                  "name": {
                    "type": "string"
                  }
                }
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "`Hello <name>!` as text, or JSON with `Accept: application/json`",
            "content": {
              "text/plain": {
                "schema": {
                  "type": "string",
                  "example": "Hello Bob!"
                }
              },
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/HelloMessage"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem"
          },
          "415": {
            "$ref": "#/components/responses/Problem"
          },
          "422": {
            "$ref": "#/components/responses/Problem"
          }
        }
      }
    },
    "/echo_hello.php": {
      "get": {
        "summary": "Hello (the original client's path)",
        "parameters": [
          {
            "name": "name",
            "in": "query",
            "required": false,
            "schema": {
              "type": "string"
            }
          }
        ],
        "responses": {
          "200": {
            "description": "`Hello <name>!` as text, or JSON with `Accept: application/json`",
            "content": {
              "text/plain": {
                "schema": {
                  "type": "string",
                  "example": "Hello Bob!"
                }
              },
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/HelloMessage"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem"
          },
          "415": {
            "$ref": "#/components/responses/Problem"
          },
          "422": {
            "$ref": "#/components/responses/Problem"
          }
        }
      },
      "post": {
        "summary": "Hello (the original client's path) (name from the body wins)",
        "parameters": [
          {
            "name": "name",
            "in": "query",
            "required": false,
            "schema": {
              "type": "string"
            }
          }
        ],
        "requestBody": {
          "required": false,
          "content": {
            "application/x-www-form-urlencoded": {
              "schema": {
                "type": "object",
                "properties": {
                  "name": {
                    "type": "string"
                  }
                }
              }
            },
            "application/json": {
              "schema": {
                "type": "object",
                "properties": {
                  "name": {
                    "type": "string"
                  }
                }
              }
            },
            "multipart/form-data": {
              "schema": {
                "type": "object",
                "properties": {
                  "name": {
                    "type": "string"
                  }
                }
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "`Hello <name>!` as text, or JSON with `Accept: application/json`",
            "content": {
              "text/plain": {
                "schema": {
                  "type": "string",
                  "example": "Hello Bob!"
                }
              },
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/HelloMessage"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem"
          },
          "415": {
            "$ref": "#/components/responses/Problem"
          },
          "422": {
            "$ref": "#/components/responses/Problem"
          }
        }
      }
    },
    "/auth/sessions": {
      "post": {
        "summary": "Sign in: a session cookie (HttpOnly, SameSite=Lax) and its CSRF token, or with kind=token an API token",
        "security": [],
        "requestBody": { "content": {
          "application/x-www-form-urlencoded": { "schema": { "$ref": "#/components/schemas/SignIn" } },
          "application/json": { "schema": { "$ref": "#/components/schemas/SignIn" } } } },
        "responses": {
          "201": { "description": "signed in; Set-Cookie for a session, the token (shown once) for kind=token",
                   "content": { "application/json": { "schema": { "type": "object" } } } },
          "401": { "$ref": "#/components/responses/Problem" },
          "422": { "$ref": "#/components/responses/Problem" }
        }
      }
    },
    "/auth/sessions/current": {
      "delete": {
        "summary": "Sign out: revokes the session or token the request carries",
        "responses": { "204": { "description": "signed out; the cookie is cleared" }, "401": { "$ref": "#/components/responses/Problem" } }
      }
    },
    "/auth/me": {
      "get": {
        "summary": "The signed-in user (and the session's CSRF token)",
        "responses": {
          "200": { "description": "the user", "content": { "application/json": { "schema": { "type": "object" } } } },
          "401": { "$ref": "#/components/responses/Problem" }
        }
      }
    },
    "/auth/tokens": {
      "get": {
        "summary": "The user's API tokens (label, created, last used, expiry; never the secret)",
        "responses": {
          "200": { "description": "tokens, newest first", "content": { "application/json": { "schema": { "type": "object" } } } },
          "401": { "$ref": "#/components/responses/Problem" }
        }
      },
      "post": {
        "summary": "A new API token (label, expires_in seconds); the secret is in this answer only",
        "responses": {
          "201": { "description": "the token", "content": { "application/json": { "schema": { "type": "object" } } } },
          "401": { "$ref": "#/components/responses/Problem" },
          "422": { "$ref": "#/components/responses/Problem" }
        }
      }
    },
    "/auth/tokens/{id}": {
      "delete": {
        "summary": "Revoke a token: refused from the next request on; its event streams end",
        "parameters": [ { "name": "id", "in": "path", "required": true, "schema": { "type": "string" } } ],
        "responses": {
          "200": { "description": "the revoked token", "content": { "application/json": { "schema": { "type": "object" } } } },
          "401": { "$ref": "#/components/responses/Problem" },
          "404": { "$ref": "#/components/responses/Problem" }
        }
      }
    },
    "/healthz": {
      "get": {
        "summary": "Health",
        "responses": {
          "200": {
            "description": "the database is open",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Health"
                }
              }
            }
          }
        }
      }
    },
    "/metrics": {
      "get": {
        "summary": "Prometheus metrics",
        "responses": {
          "200": {
            "description": "text exposition format",
            "content": {
              "text/plain": {
                "schema": {
                  "type": "string"
                }
              }
            }
          }
        }
      }
    },
    "/openapi.json": {
      "get": {
        "summary": "This document",
        "responses": {
          "200": {
            "description": "OpenAPI 3.1",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object"
                }
              }
            }
          }
        }
      }
    },
    "/": {
      "get": {
        "summary": "The notes web app (HTML; ETag, If-None-Match, strict Content-Security-Policy)",
        "responses": {
          "200": {
            "description": "HTML",
            "content": {
              "text/html": {
                "schema": {
                  "type": "string"
                }
              }
            }
          },
          "304": {
            "description": "Not modified"
          }
        }
      }
    },
    "/assets/{name}": {
      "get": {
        "summary": "A script, style sheet or icon of the web app",
        "parameters": [
          {
            "name": "name",
            "in": "path",
            "required": true,
            "schema": {
              "type": "string"
            }
          }
        ],
        "responses": {
          "200": {
            "description": "The file (text/javascript, text/css or image/svg+xml)",
            "content": {
              "text/javascript": {
                "schema": {
                  "type": "string"
                }
              },
              "text/css": {
                "schema": {
                  "type": "string"
                }
              },
              "image/svg+xml": {
                "schema": {
                  "type": "string"
                }
              }
            }
          },
          "304": {
            "description": "Not modified"
          },
          "404": {
            "description": "No such file",
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                }
              }
            }
          }
        }
      }
    },
    "/form.html": {
      "get": {
        "summary": "A test form posting to /echo and /uploads",
        "responses": {
          "200": {
            "description": "HTML",
            "content": {
              "text/html": {
                "schema": {
                  "type": "string"
                }
              }
            }
          }
        }
      }
    },
    "/notes": {
      "get": {
        "summary": "List notes, newest first",
        "parameters": [
          {
            "name": "limit",
            "in": "query",
            "schema": {
              "type": "integer",
              "minimum": 1,
              "default": 100
            },
            "description": "values over 1000 act as 1000"
          },
          {
            "name": "after",
            "in": "query",
            "schema": {
              "type": "string",
              "pattern": "^[0-9]+$"
            },
            "description": "cursor: a note id"
          },
          {
            "name": "order",
            "in": "query",
            "schema": {
              "type": "string",
              "enum": [
                "asc",
                "desc"
              ],
              "default": "desc"
            }
          },
          {
            "name": "q",
            "in": "query",
            "schema": {
              "type": "string"
            },
            "description": "full-text search"
          }
        ],
        "responses": {
          "200": {
            "description": "a page",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/NoteList"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem"
          }
        }
      },
      "post": {
        "summary": "Create a note",
        "requestBody": {
          "required": true,
          "content": {
            "application/x-www-form-urlencoded": {
              "schema": {
                "$ref": "#/components/schemas/NoteInput"
              }
            },
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/NoteInput"
              }
            },
            "multipart/form-data": {
              "schema": {
                "$ref": "#/components/schemas/NoteInput"
              }
            }
          }
        },
        "responses": {
          "201": {
            "description": "created",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/NoteEnvelope"
                }
              }
            },
            "headers": {
              "ETag": {
                "description": "the note's version, quoted: \"3\"",
                "schema": {
                  "type": "string"
                }
              },
              "Location": {
                "schema": {
                  "type": "string"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem"
          },
          "404": {
            "$ref": "#/components/responses/Problem"
          },
          "413": {
            "$ref": "#/components/responses/Problem"
          },
          "415": {
            "$ref": "#/components/responses/Problem"
          },
          "422": {
            "$ref": "#/components/responses/Problem"
          }
        }
      }
    },
    "/notes/events": {
      "get": {
        "summary": "Live changes as server-sent events",
        "parameters": [
          {
            "name": "Last-Event-ID",
            "in": "header",
            "required": false,
            "schema": {
              "type": "string"
            }
          }
        ],
        "responses": {
          "200": {
            "description": "events note.created, note.updated, note.deleted (data: the note) and reload",
            "content": {
              "text/event-stream": {
                "schema": {
                  "type": "string"
                }
              }
            }
          }
        }
      }
    },
    "/notes/{id}": {
      "parameters": [
        {
          "name": "id",
          "in": "path",
          "required": true,
          "schema": {
            "type": "string",
            "pattern": "^[0-9]+$"
          },
          "description": "the note id (decimal digits)"
        }
      ],
      "get": {
        "summary": "Show a note",
        "parameters": [
          {
            "name": "If-None-Match",
            "in": "header",
            "schema": {
              "type": "string"
            }
          }
        ],
        "responses": {
          "200": {
            "description": "the note",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/NoteEnvelope"
                }
              }
            },
            "headers": {
              "ETag": {
                "description": "the note's version, quoted: \"3\"",
                "schema": {
                  "type": "string"
                }
              }
            }
          },
          "304": {
            "description": "not modified"
          },
          "404": {
            "$ref": "#/components/responses/Problem"
          }
        }
      },
      "put": {
        "summary": "Update a note",
        "parameters": [
          {
            "name": "If-Match",
            "in": "header",
            "required": false,
            "schema": {
              "type": "string"
            },
            "description": "an ETag; a stale one is 412 and nothing changes"
          }
        ],
        "requestBody": {
          "content": {
            "application/x-www-form-urlencoded": {
              "schema": {
                "$ref": "#/components/schemas/NoteInput"
              }
            },
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/NoteInput"
              }
            },
            "multipart/form-data": {
              "schema": {
                "$ref": "#/components/schemas/NoteInput"
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "updated, or unchanged ('No Body Sent')",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/NoteEnvelope"
                }
              }
            },
            "headers": {
              "ETag": {
                "description": "the note's version, quoted: \"3\"",
                "schema": {
                  "type": "string"
                }
              }
            }
          },
          "412": {
            "$ref": "#/components/responses/Problem"
          },
          "400": {
            "$ref": "#/components/responses/Problem"
          },
          "404": {
            "$ref": "#/components/responses/Problem"
          },
          "413": {
            "$ref": "#/components/responses/Problem"
          },
          "415": {
            "$ref": "#/components/responses/Problem"
          },
          "422": {
            "$ref": "#/components/responses/Problem"
          }
        }
      },
      "patch": {
        "summary": "Update a note",
        "parameters": [
          {
            "name": "If-Match",
            "in": "header",
            "required": false,
            "schema": {
              "type": "string"
            },
            "description": "an ETag; a stale one is 412 and nothing changes"
          }
        ],
        "requestBody": {
          "content": {
            "application/x-www-form-urlencoded": {
              "schema": {
                "$ref": "#/components/schemas/NoteInput"
              }
            },
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/NoteInput"
              }
            },
            "multipart/form-data": {
              "schema": {
                "$ref": "#/components/schemas/NoteInput"
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "updated, or unchanged ('No Body Sent')",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/NoteEnvelope"
                }
              }
            },
            "headers": {
              "ETag": {
                "description": "the note's version, quoted: \"3\"",
                "schema": {
                  "type": "string"
                }
              }
            }
          },
          "412": {
            "$ref": "#/components/responses/Problem"
          },
          "400": {
            "$ref": "#/components/responses/Problem"
          },
          "404": {
            "$ref": "#/components/responses/Problem"
          },
          "413": {
            "$ref": "#/components/responses/Problem"
          },
          "415": {
            "$ref": "#/components/responses/Problem"
          },
          "422": {
            "$ref": "#/components/responses/Problem"
          }
        }
      },
      "delete": {
        "summary": "Delete a note and its attachments",
        "parameters": [
          {
            "name": "If-Match",
            "in": "header",
            "required": false,
            "schema": {
              "type": "string"
            },
            "description": "an ETag; a stale one is 412 and nothing changes"
          }
        ],
        "responses": {
          "200": {
            "description": "the note as it was",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/NoteEnvelope"
                }
              }
            }
          },
          "404": {
            "$ref": "#/components/responses/Problem"
          },
          "412": {
            "$ref": "#/components/responses/Problem"
          }
        }
      },
      "post": {
        "summary": "Method override: _method=PUT|PATCH|DELETE (form or JSON field) or X-HTTP-Method-Override",
        "requestBody": {
          "content": {
            "application/x-www-form-urlencoded": {
              "schema": {
                "$ref": "#/components/schemas/NoteInput"
              }
            },
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/NoteInput"
              }
            },
            "multipart/form-data": {
              "schema": {
                "$ref": "#/components/schemas/NoteInput"
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "as the overriding method",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/NoteEnvelope"
                }
              }
            }
          },
          "405": {
            "$ref": "#/components/responses/Problem"
          },
          "412": {
            "$ref": "#/components/responses/Problem"
          },
          "400": {
            "$ref": "#/components/responses/Problem"
          },
          "404": {
            "$ref": "#/components/responses/Problem"
          },
          "413": {
            "$ref": "#/components/responses/Problem"
          },
          "415": {
            "$ref": "#/components/responses/Problem"
          },
          "422": {
            "$ref": "#/components/responses/Problem"
          }
        }
      }
    },
    "/uploads": {
      "get": {
        "summary": "List uploads, newest first",
        "responses": {
          "200": {
            "description": "uploads",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/UploadList"
                }
              }
            }
          }
        }
      },
      "post": {
        "summary": "Upload files",
        "requestBody": {
          "required": true,
          "content": {
            "multipart/form-data": {
              "schema": {
                "$ref": "#/components/schemas/UploadInput"
              }
            }
          }
        },
        "responses": {
          "201": {
            "description": "stored",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/UploadList"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem"
          },
          "404": {
            "$ref": "#/components/responses/Problem"
          },
          "413": {
            "$ref": "#/components/responses/Problem"
          },
          "415": {
            "$ref": "#/components/responses/Problem"
          },
          "422": {
            "$ref": "#/components/responses/Problem"
          }
        }
      }
    },
    "/upload": {
      "post": {
        "summary": "Upload files (the original recipe's path)",
        "requestBody": {
          "required": true,
          "content": {
            "multipart/form-data": {
              "schema": {
                "$ref": "#/components/schemas/UploadInput"
              }
            }
          }
        },
        "responses": {
          "201": {
            "description": "stored",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/UploadList"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem"
          },
          "404": {
            "$ref": "#/components/responses/Problem"
          },
          "413": {
            "$ref": "#/components/responses/Problem"
          },
          "415": {
            "$ref": "#/components/responses/Problem"
          },
          "422": {
            "$ref": "#/components/responses/Problem"
          }
        }
      }
    },
    "/uploads/{id}": {
      "parameters": [
        {
          "name": "id",
          "in": "path",
          "required": true,
          "schema": {
            "type": "string",
            "pattern": "^[0-9a-f]{24}$"
          }
        }
      ],
      "get": {
        "summary": "Show an upload",
        "responses": {
          "200": {
            "description": "the upload",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/UploadEnvelope"
                }
              }
            }
          },
          "404": {
            "$ref": "#/components/responses/Problem"
          }
        }
      },
      "delete": {
        "summary": "Delete an upload",
        "responses": {
          "200": {
            "description": "the upload as it was",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/UploadEnvelope"
                }
              }
            }
          },
          "404": {
            "$ref": "#/components/responses/Problem"
          }
        }
      }
    },
    "/uploads/{id}/content": {
      "parameters": [
        {
          "name": "id",
          "in": "path",
          "required": true,
          "schema": {
            "type": "string",
            "pattern": "^[0-9a-f]{24}$"
          }
        }
      ],
      "get": {
        "summary": "The bytes; single Range requests",
        "parameters": [
          {
            "name": "Range",
            "in": "header",
            "schema": {
              "type": "string"
            }
          },
          {
            "name": "If-Range",
            "in": "header",
            "schema": {
              "type": "string"
            }
          },
          {
            "name": "If-None-Match",
            "in": "header",
            "schema": {
              "type": "string"
            }
          }
        ],
        "responses": {
          "200": {
            "description": "the bytes",
            "content": {
              "*/*": {
                "schema": {
                  "type": "string",
                  "format": "binary"
                }
              }
            }
          },
          "206": {
            "description": "a range",
            "content": {
              "*/*": {
                "schema": {
                  "type": "string",
                  "format": "binary"
                }
              }
            }
          },
          "304": {
            "description": "not modified"
          },
          "404": {
            "$ref": "#/components/responses/Problem"
          },
          "416": {
            "$ref": "#/components/responses/Problem"
          }
        }
      }
    },
    "/echo": {
      "get": {
        "summary": "GET /echo: the request as JSON (httpbin /anything shape)",
        "responses": {
          "200": {
            "description": "the request",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Echo"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem"
          },
          "413": {
            "$ref": "#/components/responses/Problem"
          }
        }
      },
      "post": {
        "summary": "POST /echo: the request as JSON (httpbin /anything shape)",
        "requestBody": {
          "required": false,
          "content": {
            "*/*": {
              "schema": {}
            }
          }
        },
        "responses": {
          "200": {
            "description": "the request",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Echo"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem"
          },
          "413": {
            "$ref": "#/components/responses/Problem"
          }
        }
      },
      "put": {
        "summary": "PUT /echo: the request as JSON (httpbin /anything shape)",
        "requestBody": {
          "required": false,
          "content": {
            "*/*": {
              "schema": {}
            }
          }
        },
        "responses": {
          "200": {
            "description": "the request",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Echo"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem"
          },
          "413": {
            "$ref": "#/components/responses/Problem"
          }
        }
      },
      "patch": {
        "summary": "PATCH /echo: the request as JSON (httpbin /anything shape)",
        "requestBody": {
          "required": false,
          "content": {
            "*/*": {
              "schema": {}
            }
          }
        },
        "responses": {
          "200": {
            "description": "the request",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Echo"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem"
          },
          "413": {
            "$ref": "#/components/responses/Problem"
          }
        }
      },
      "delete": {
        "summary": "DELETE /echo: the request as JSON (httpbin /anything shape)",
        "responses": {
          "200": {
            "description": "the request",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Echo"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem"
          },
          "413": {
            "$ref": "#/components/responses/Problem"
          }
        }
      },
      "options": {
        "summary": "OPTIONS /echo: the request as JSON (httpbin /anything shape)",
        "responses": {
          "200": {
            "description": "the request",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Echo"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem"
          },
          "413": {
            "$ref": "#/components/responses/Problem"
          }
        }
      }
    }
  },
  "components": {
    "responses": {
      "Problem": {
        "description": "an RFC 9457 problem",
        "content": {
          "application/problem+json": {
            "schema": {
              "$ref": "#/components/schemas/Problem"
            }
          }
        }
      }
    },
    "schemas": {
      "SignIn": {
        "type": "object",
        "required": ["name", "password"],
        "properties": {
          "name": { "type": "string" },
          "password": { "type": "string" },
          "kind": { "type": "string", "enum": ["session", "token"] },
          "label": { "type": "string" },
          "expires_in": { "type": "string", "description": "seconds" }
        }
      },
      "Problem": {
        "type": "object",
        "required": [
          "type",
          "title",
          "status"
        ],
        "properties": {
          "type": {
            "type": "string"
          },
          "title": {
            "type": "string"
          },
          "status": {
            "type": "integer"
          },
          "detail": {
            "type": "string"
          },
          "request_id": {
            "type": "string"
          },
          "errors": {
            "type": "array",
            "items": {
              "type": "object",
              "required": [
                "field",
                "message"
              ],
              "properties": {
                "field": {
                  "type": "string"
                },
                "message": {
                  "type": "string"
                }
              }
            }
          }
        }
      },
      "HelloMessage": {
        "type": "object",
        "required": [
          "message"
        ],
        "properties": {
          "message": {
            "type": "string"
          }
        }
      },
      "Health": {
        "type": "object",
        "required": [
          "status"
        ],
        "properties": {
          "status": {
            "const": "ok"
          }
        }
      },
      "NoteInput": {
        "type": "object",
        "properties": {
          "body": {
            "type": "string"
          },
          "_method": {
            "type": "string",
            "enum": [
              "PUT",
              "PATCH",
              "DELETE"
            ]
          }
        }
      },
      "Note": {
        "type": "object",
        "required": [
          "id",
          "body",
          "created_at",
          "updated_at",
          "version",
          "attachments"
        ],
        "properties": {
          "id": {
            "type": "string",
            "pattern": "^[0-9]+$"
          },
          "body": {
            "type": "string"
          },
          "created_at": {
            "type": "string",
            "description": "UTC yyyy-MM-dd HH:mm:ss"
          },
          "updated_at": {
            "type": "string"
          },
          "version": {
            "type": "integer"
          },
          "attachments": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/Upload"
            }
          }
        }
      },
      "NoteEnvelope": {
        "type": "object",
        "required": [
          "note"
        ],
        "properties": {
          "note": {
            "$ref": "#/components/schemas/Note"
          },
          "message": {
            "type": "string"
          }
        }
      },
      "NoteList": {
        "type": "object",
        "required": [
          "notes",
          "next"
        ],
        "properties": {
          "notes": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/Note"
            }
          },
          "next": {
            "type": [
              "string",
              "null"
            ]
          }
        }
      },
      "Upload": {
        "type": "object",
        "required": [
          "id",
          "filename",
          "content_type",
          "size",
          "sha256",
          "created_at",
          "note_id",
          "url"
        ],
        "properties": {
          "id": {
            "type": "string"
          },
          "filename": {
            "type": "string"
          },
          "content_type": {
            "type": "string"
          },
          "size": {
            "type": "integer"
          },
          "sha256": {
            "type": "string"
          },
          "created_at": {
            "type": "string"
          },
          "note_id": {
            "type": [
              "string",
              "null"
            ]
          },
          "url": {
            "type": "string"
          }
        }
      },
      "UploadInput": {
        "type": "object",
        "properties": {
          "note_id": {
            "type": "string"
          }
        },
        "additionalProperties": {
          "type": "string",
          "format": "binary"
        }
      },
      "UploadList": {
        "type": "object",
        "required": [
          "uploads"
        ],
        "properties": {
          "uploads": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/Upload"
            }
          }
        }
      },
      "UploadEnvelope": {
        "type": "object",
        "required": [
          "upload"
        ],
        "properties": {
          "upload": {
            "$ref": "#/components/schemas/Upload"
          }
        }
      },
      "Echo": {
        "type": "object",
        "required": [
          "method",
          "url",
          "args",
          "form",
          "files",
          "json",
          "data",
          "headers"
        ],
        "properties": {
          "method": {
            "type": "string"
          },
          "url": {
            "type": "string"
          },
          "args": {
            "type": "object"
          },
          "form": {
            "type": "object"
          },
          "files": {
            "type": "object"
          },
          "json": {},
          "data": {
            "type": "string"
          },
          "headers": {
            "type": "object"
          }
        }
      }
    }
  }
}
"""#
}
