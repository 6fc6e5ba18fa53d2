-- name: CreateNote :exec
INSERT INTO notes (id, user_id, body, email, email_index) VALUES ($1, $2, $3, $4, $5);

-- name: GetNote :one
SELECT id, user_id, body, email FROM notes WHERE id = $1;

-- name: FindByEmail :one
SELECT id, user_id, body, email FROM notes WHERE email_index = $1;

-- name: UpdateBody :exec
UPDATE notes SET body = $1 WHERE id = $2;

-- name: UpdateOwner :exec
UPDATE notes SET user_id = $1 WHERE id = $2;

-- name: UpdateOwnerAndBody :exec
UPDATE notes SET user_id = $1, body = $2 WHERE id = $3;

-- name: UpsertNote :exec
INSERT INTO notes (id, user_id, body) VALUES ($1, $2, $3)
ON CONFLICT (id) DO UPDATE SET user_id = excluded.user_id, body = excluded.body;

-- name: UpdateEmail :exec
UPDATE notes SET email = $1, email_index = $2 WHERE id = $3;
