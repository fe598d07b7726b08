// Package feedbackdb stores feedback in PostgreSQL.
package feedbackdb

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/services/community/internal/business/feedbackbus"
)

// Store is the feedback table.
type Store struct{ pool *pgxpool.Pool }

// New returns a store over pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

func null(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Create inserts a message.
func (s *Store) Create(ctx context.Context, f feedbackbus.NewFeedback) (feedbackbus.Feedback, error) {
	out := feedbackbus.Feedback{Message: f.Message, Email: f.Email, URL: f.URL, Category: f.Category,
		ClientIP: f.ClientIP, UserAgent: f.UserAgent}
	err := s.pool.QueryRow(ctx, `
		INSERT INTO feedback (message, email, url, category, client_ip, user_agent)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING id, created_at`,
		f.Message, null(f.Email), null(f.URL), f.Category, null(f.ClientIP), null(f.UserAgent),
	).Scan(&out.ID, &out.CreatedAt)
	if err != nil {
		return feedbackbus.Feedback{}, fmt.Errorf("insert feedback: %w", err)
	}
	return out, nil
}
