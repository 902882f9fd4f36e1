-- Tasks written before state_changed_at existed: updated_at is the best
-- estimate there is.
UPDATE cks_outbox_tasks SET state_changed_at = updated_at
