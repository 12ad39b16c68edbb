import { useState, type FormEvent } from "react";
import { addDays, differenceInCalendarDays, format, isBefore, startOfDay } from "date-fns";
import { CalendarDays, CheckCircle2 } from "lucide-react";
import clsx from "clsx";

type Booking = { name: string; checkIn: Date; nights: number };

const TODAY = startOfDay(new Date(2026, 5, 1));

export default function BookingForm() {
  const [name, setName] = useState("");
  const [checkIn, setCheckIn] = useState<Date>(addDays(TODAY, 7));
  const [nights, setNights] = useState(3);
  const [booked, setBooked] = useState<Booking | null>(null);
  const checkOut = addDays(checkIn, nights);
  const tooSoon = isBefore(checkIn, addDays(TODAY, 1));

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (!name.trim() || tooSoon) return;
    setBooked({ name: name.trim(), checkIn, nights });
  }

  return (
    <form onSubmit={submit} className="mx-auto mt-12 max-w-md space-y-4 rounded-xl border p-6 shadow">
      <h2 className="flex items-center gap-2 text-2xl font-bold"><CalendarDays className="h-6 w-6" /> Book your stay</h2>
      <label className="block">
        <span className="text-sm font-medium">Full name</span>
        <input className="mt-1 w-full rounded border px-3 py-2" value={name} onChange={(e) => setName(e.target.value)} />
      </label>
      <label className="block">
        <span className="text-sm font-medium">Check-in</span>
        <input type="date" className="mt-1 w-full rounded border px-3 py-2" value={format(checkIn, "yyyy-MM-dd")}
          onChange={(e) => setCheckIn(startOfDay(new Date(e.target.value)))} />
      </label>
      <label className="block">
        <span className="text-sm font-medium">Nights</span>
        <input type="number" min={1} max={30} className="mt-1 w-full rounded border px-3 py-2" value={nights}
          onChange={(e) => setNights(Number(e.target.value))} />
      </label>
      <p className={clsx("text-sm", tooSoon ? "text-rose-600" : "text-slate-600")}>
        {format(checkIn, "EEE d MMM")} to {format(checkOut, "EEE d MMM yyyy")}: {differenceInCalendarDays(checkOut, checkIn)} nights
      </p>
      <button type="submit" disabled={tooSoon} className="w-full rounded bg-indigo-600 py-2 font-semibold text-white">
        Reserve
      </button>
      {booked && (
        <p className="flex items-center gap-2 text-emerald-700">
          <CheckCircle2 className="h-5 w-5" /> Thanks {booked.name}, see you on {format(booked.checkIn, "PPP")}.
        </p>
      )}
    </form>
  );
}
