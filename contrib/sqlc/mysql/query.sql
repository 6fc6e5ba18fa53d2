-- name: CreateNote :exec
INSERT INTO notes (id, user_id, body, email, email_index) VALUES (?, ?, ?, ?, ?);

-- name: GetNote :one
SELECT id, user_id, body, email FROM notes WHERE id = ?;

-- name: FindByEmail :one
SELECT id, user_id, body, email FROM notes WHERE email_index = ?;

-- name: UpdateBody :exec
UPDATE notes SET body = ? WHERE id = ?;

-- name: UpdateOwner :exec
UPDATE notes SET user_id = ? WHERE id = ?;

-- name: UpdateOwnerAndBody :exec
UPDATE notes SET user_id = ?, body = ? WHERE id = ?;

-- name: UpsertNote :exec
INSERT INTO notes (id, user_id, body) VALUES (?, ?, ?)
ON DUPLICATE KEY UPDATE user_id = VALUES(user_id), body = VALUES(body);

-- name: UpdateEmail :exec
UPDATE notes SET email = ?, email_index = ? WHERE id = ?;
