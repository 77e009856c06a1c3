// The CLI has no library surface: its scripts run directly (demo.ts, demo-tools.ts, ensure-database.ts).
export {};
