-- Schedules (issue 42): one row per schedule. The schedule service decides
-- every fire; these statements read and write the rows it names.

-- name: ScheduleInsert :exec
INSERT INTO cks_schedules (name, cron, time_zone, misfire, task, paused, paused_by, created_by,
    created_at, updated_at, last_slot, last_fired_at, last_task_id)
VALUES (@name, @cron, @time_zone, @misfire, @task, @paused, @paused_by, @created_by,
    @created_at, @updated_at, @last_slot, @last_fired_at, @last_task_id);

-- name: ScheduleGet :many
-- variants: ForUpdate
SELECT * FROM cks_schedules WHERE name = @name /*lock*/;

-- name: ScheduleList :many
SELECT * FROM cks_schedules ORDER BY name;

-- name: ScheduleUpdate :execrows
UPDATE cks_schedules SET paused = @paused, paused_by = @paused_by, updated_at = @updated_at,
    last_slot = @last_slot, last_fired_at = @last_fired_at, last_task_id = @last_task_id
WHERE name = @name;

-- name: ScheduleDelete :execrows
DELETE FROM cks_schedules WHERE name = @name;
