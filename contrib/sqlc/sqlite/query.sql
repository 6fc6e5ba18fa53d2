-- name: CreateNote :exec
INSERT INTO notes (id, user_id, body, email, email_index) VALUES (?, ?, ?, ?, ?);

-- name: GetNote :one
SELECT id, user_id, body, email FROM notes WHERE id = ?;

-- name: FindByEmail :one
SELECT id, user_id, body, email FROM notes WHERE email_index = ?;
