-- Up Migration
-- How the pages look for a person (Settings, Appearance): light, dark or the system's colours, less motion, larger
-- text. Applied as classes on <html>; the API does not read them.
ALTER TABLE users
  ADD COLUMN theme text NOT NULL DEFAULT 'system' CHECK (theme IN ('system', 'light', 'dark')),
  ADD COLUMN reduce_motion boolean NOT NULL DEFAULT false,
  ADD COLUMN larger_text boolean NOT NULL DEFAULT false;

-- Down Migration
ALTER TABLE users DROP COLUMN theme, DROP COLUMN reduce_motion, DROP COLUMN larger_text;
