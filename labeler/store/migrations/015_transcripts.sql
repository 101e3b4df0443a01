-- 015: conversations and agent traces as answers (issue 46).
--
-- An answer that is a conversation keeps its normalised messages as JSON text (the OpenAI chat
-- shape, labeler.transcripts.Transcript.to_json); its `text` is the rendering every reader of
-- answers already uses. NULL for an answer that is one text. A rubric says which turn it rates;
-- NULL reads as 'last'.

ALTER TABLE answers ADD COLUMN transcript VARCHAR;
ALTER TABLE rubrics ADD COLUMN turn VARCHAR;
