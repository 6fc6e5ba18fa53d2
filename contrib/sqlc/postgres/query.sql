-- name: CreateNote :exec
INSERT INTO notes (id, user_id, body, email, email_index) VALUES ($1, $2, $3, $4, $5);

-- name: GetNote :one
SELECT id, user_id, body, email FROM notes WHERE id = $1;

-- name: FindByEmail :one
SELECT id, user_id, body, email FROM notes WHERE email_index = $1;
